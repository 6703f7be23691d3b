package broker

import (
	"encoding/json"

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
				size = jsonSize(ti.Subscribers) + jsonSize(ti.Resources) + len(ti.Topic) + 64
			} else {
				size = jsonSize(ti.Records[u-1])
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

func jsonSize(v any) int {
	data, _ := json.Marshal(v)
	return len(data)
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
