package broker

import (
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Paging of the topics reply. The state of all topics can be far bigger
// than one NATS message (a hundred 1 MiB records), so a reply carries about
// maxBytes of it. The unit of paging is a topic's head (its subscribers and
// resources) or one of its records: a topic with many big records continues
// on the next page under the same name. Offsets count units.

const (
	topicsPageBytes = 2 << 20   // local replies (the socket's limit is 8 MiB)
	linkPageBytes   = 256 << 10 // replies over a bridge link
	// linkRecordBytes: a record's message is cut to this much in a listing
	// sent over a link, so that one record always fits a page.
	linkRecordBytes = 64 << 10
)

// topicsPage reads the topics of req and returns the page at req.Offset.
func (b *Broker) topicsPage(req wire.TopicsRequest, budget int) (*wire.TopicsReply, error) {
	all, err := b.topics(wire.TopicsRequest{Topic: req.Topic})
	if err != nil {
		return nil, err
	}
	if req.MaxBytes > 0 && req.MaxBytes < budget {
		budget = req.MaxBytes
	}
	page, next := pageTopics(all.Topics, req.Offset, budget)
	return &wire.TopicsReply{Topics: page, NextOffset: next}, nil
}

// pageTopics returns the units from offset on, up to budget bytes of JSON
// (at least one unit), and the offset of the next page (0: none).
func pageTopics(all []wire.TopicInfo, offset, budget int) ([]wire.TopicInfo, int) {
	out := []wire.TopicInfo{}
	unit, used := 0, 0
	for _, ti := range all {
		units := 1 + len(ti.Records)
		if unit+units <= offset {
			unit += units
			continue
		}
		var cur *wire.TopicInfo
		for u := 0; u < units; u, unit = u+1, unit+1 {
			if unit < offset {
				continue
			}
			var size int
			if u == 0 {
				size = headSize(ti)
			} else {
				size = recordJSONSize(ti.Records[u-1])
			}
			if used > 0 && used+size > budget {
				return out, unit
			}
			used += size
			if cur == nil {
				out = append(out, wire.TopicInfo{Topic: ti.Topic, Records: []wire.TopicRecord{},
					Subscribers: []wire.TopicSubscriber{}, Resources: []wire.ResourceState{}})
				cur = &out[len(out)-1]
			}
			if u == 0 {
				cur.Subscribers, cur.Resources = ti.Subscribers, ti.Resources
			} else {
				cur.Records = append(cur.Records, ti.Records[u-1])
			}
		}
	}
	return out, 0
}

// recordJSONSize is about the size of a record's JSON (its strings, and
// room for the fields; escapes can make it bigger, which the budgets leave
// room for: a page of 2 MiB in an 8 MiB message, records cut to 64 KiB on a
// link of 1 MiB).
func recordJSONSize(r wire.TopicRecord) int {
	return len(r.Topic) + len(r.From.ID) + len(r.From.Name) + len(r.From.Cwd) + len(r.Message) + len(r.Resource) + 320
}

func headSize(ti wire.TopicInfo) int {
	n := len(ti.Topic) + 64
	for _, s := range ti.Subscribers {
		n += len(s.SessionID) + len(s.Name) + 96
	}
	for _, r := range ti.Resources {
		n += len(r.Resource) + len(r.Message) + 160
		if r.Holder != nil {
			n += len(r.Holder.ID) + len(r.Holder.Name) + len(r.Holder.Cwd)
		}
	}
	return n
}

// cutForLink shortens long record messages in a listing sent over a link.
func cutForLink(topics []wire.TopicInfo) {
	for i := range topics {
		for j := range topics[i].Records {
			r := &topics[i].Records[j]
			if len(r.Message) > linkRecordBytes {
				r.Message = cutUTF8(r.Message, linkRecordBytes) + "… (cut: the record is longer; read it on its host)"
			}
		}
	}
}

// cutUTF8 cuts s to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
