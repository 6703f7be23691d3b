package store

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Topics: each sender's current record on a topic and each subscription,
// under
//
//	trec/<topic>\x00<session>   the TopicRecord of sender <session> (JSON)
//	tsub/<topic>\x00<session>   the Subscription of <session> (JSON)
//
// so that one topic's records (or subscriptions) read as one range.

const (
	topicRecordsPrefix = "trec/"
	topicSubsPrefix    = "tsub/"
)

// TopicRecord is a sender's current record on a topic.
type TopicRecord struct {
	Topic       string    `json:"topic"`
	From        wire.Peer `json:"from"`
	Event       string    `json:"event"`
	Message     string    `json:"message"`
	Resource    string    `json:"resource,omitempty"`
	Ownership   string    `json:"ownership,omitempty"`
	Seq         uint64    `json:"seq"`
	Version     int64     `json:"version"`
	PublishedAt time.Time `json:"published_at"`
}

// Subscription is a session's subscription to a topic.
type Subscription struct {
	Topic        string    `json:"topic"`
	SessionID    string    `json:"session_id"`
	AwaitRelease bool      `json:"await_release"`
	Since        time.Time `json:"since"`
}

func topicRecordKey(topic, sid string) string { return topicRecordsPrefix + topic + "\x00" + sid }
func topicSubKey(topic, sid string) string    { return topicSubsPrefix + topic + "\x00" + sid }

// topicPrefix is the prefix of topic's keys in family all; "" means every
// topic.
func topicPrefix(all, topic string) string {
	if topic == "" {
		return all
	}
	return all + topic + "\x00"
}

// parseTopicKey splits a record or subscription key of family all.
func parseTopicKey(all, key string) (topic, sid string, ok bool) {
	rest, ok := strings.CutPrefix(key, all)
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "\x00")
}

// TopicRecord returns sender sid's record on topic; ok is false when there
// is none or it is unreadable.
func (t *Txn) TopicRecord(topic, sid string) (r TopicRecord, ok bool, err error) {
	v, err := t.Get(topicRecordKey(topic, sid))
	if err == ErrNotFound {
		return TopicRecord{}, false, nil
	}
	if err != nil {
		return TopicRecord{}, false, err
	}
	if json.Unmarshal(v, &r) != nil {
		return TopicRecord{}, false, nil
	}
	return r, true, nil
}

// PutTopicRecord stores r as sender sid's record on r.Topic, replacing the
// one before.
func (t *Txn) PutTopicRecord(sid string, r TopicRecord) error {
	data, err := EncodeTopicRecord(r)
	if err != nil {
		return fmt.Errorf("encode topic record: %w", err)
	}
	return t.Set(topicRecordKey(r.Topic, sid), data)
}

// ScanTopicRecords calls fn with the records on topic ("": every topic)
// and their senders, in key order; unreadable ones are skipped.
func (t *Txn) ScanTopicRecords(topic string, fn func(sid string, r TopicRecord)) error {
	return t.Scan(topicPrefix(topicRecordsPrefix, topic), func(k string, v []byte) (bool, error) {
		var r TopicRecord
		if json.Unmarshal(v, &r) == nil {
			_, sid, _ := parseTopicKey(topicRecordsPrefix, k)
			fn(sid, r)
		}
		return true, nil
	})
}

// Subscribed reports whether session sid is subscribed to topic.
func (t *Txn) Subscribed(topic, sid string) (bool, error) { return t.Has(topicSubKey(topic, sid)) }

// PutSubscription stores s, replacing the one before.
func (t *Txn) PutSubscription(s Subscription) error {
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode subscription: %w", err)
	}
	return t.Set(topicSubKey(s.Topic, s.SessionID), data)
}

// DeleteSubscription removes session sid's subscription to topic (absent
// or not).
func (t *Txn) DeleteSubscription(topic, sid string) error { return t.Delete(topicSubKey(topic, sid)) }

// ScanSubscriptions calls fn with the subscriptions to topic ("": every
// topic); unreadable ones are skipped.
func (t *Txn) ScanSubscriptions(topic string, fn func(Subscription)) error {
	return t.Scan(topicPrefix(topicSubsPrefix, topic), func(_ string, v []byte) (bool, error) {
		var s Subscription
		if json.Unmarshal(v, &s) == nil {
			fn(s)
		}
		return true, nil
	})
}

// EachSubscriber calls fn with the session of every subscription, without
// reading values.
func (t *Txn) EachSubscriber(fn func(sid string)) {
	t.Keys(topicSubsPrefix, func(k string) bool {
		if _, sid, ok := parseTopicKey(topicSubsPrefix, k); ok {
			fn(sid)
		}
		return true
	})
}

// HasTopicState reports whether session sid has a subscription or a
// record on any topic.
func (t *Txn) HasTopicState(sid string) bool {
	found := false
	for _, prefix := range []string{topicSubsPrefix, topicRecordsPrefix} {
		t.Keys(prefix, func(k string) bool {
			found = strings.HasSuffix(k, "\x00"+sid)
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// DeleteSubscriptionsOf removes every subscription of session sid.
func (t *Txn) DeleteSubscriptionsOf(sid string) error {
	var keys []string
	t.Keys(topicSubsPrefix, func(k string) bool {
		if strings.HasSuffix(k, "\x00"+sid) {
			keys = append(keys, k)
		}
		return true
	})
	for _, k := range keys {
		if err := t.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// TopicRef names one stored record (Record) or subscription.
type TopicRef struct {
	Topic, Session string
	Record         bool
}

func (r TopicRef) key() string {
	if r.Record {
		return topicRecordKey(r.Topic, r.Session)
	}
	return topicSubKey(r.Topic, r.Session)
}

// TopicRefs returns the records, then the subscriptions, of the sessions
// match accepts, without reading values.
func (t *Txn) TopicRefs(match func(sid string) bool) []TopicRef {
	var out []TopicRef
	for _, prefix := range []string{topicRecordsPrefix, topicSubsPrefix} {
		t.Keys(prefix, func(k string) bool {
			if topic, sid, ok := parseTopicKey(prefix, k); ok && match(sid) {
				out = append(out, TopicRef{Topic: topic, Session: sid, Record: prefix == topicRecordsPrefix})
			}
			return true
		})
	}
	return out
}

// DeleteTopicRef removes what ref names and reports whether it was there;
// for a readable record it returns the record removed.
func (t *Txn) DeleteTopicRef(ref TopicRef) (TopicRecord, bool, error) {
	v, err := t.Get(ref.key())
	if err == ErrNotFound {
		return TopicRecord{}, false, nil
	}
	if err != nil {
		return TopicRecord{}, false, err
	}
	var r TopicRecord
	if ref.Record && json.Unmarshal(v, &r) != nil {
		r = TopicRecord{}
	}
	return r, true, t.Delete(ref.key())
}

// EncodeTopicRecord is a topic record's stored encoding (history keeps it
// too).
func EncodeTopicRecord(r TopicRecord) ([]byte, error) { return json.Marshal(r) }
