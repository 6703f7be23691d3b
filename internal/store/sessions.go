package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// Sessions: what is kept of each lasting session, so that it is known
// (disconnected) after a restart, under
//
//	sess/<session id>   its SessionRecord as JSON

const sessionPrefix = "sess/"

func sessionKey(id string) string { return sessionPrefix + id }

// SessionRecord is what is stored of a session.
type SessionRecord struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	Cwd      string    `json:"cwd"`
	Project  string    `json:"project"`
	Model    string    `json:"model,omitempty"`
	Created  time.Time `json:"created"`
	LastSeen time.Time `json:"last_seen"`
	Mailed   bool      `json:"mailed,omitempty"` // a message was ever stored for it
}

// PutSession stores r, replacing the record of its session.
func (t *Txn) PutSession(r SessionRecord) error {
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode session %s: %w", r.ID, err)
	}
	return t.Set(sessionKey(r.ID), data)
}

// DeleteSession removes the record of session id (absent or not).
func (t *Txn) DeleteSession(id string) error { return t.Delete(sessionKey(id)) }

// ScanSessions calls fn with every stored session record; an unreadable
// one is logged and skipped.
func (t *Txn) ScanSessions(fn func(SessionRecord)) error {
	return t.Scan(sessionPrefix, func(_ string, v []byte) (bool, error) {
		var r SessionRecord
		if err := json.Unmarshal(v, &r); err != nil {
			t.logger().Warn("skip unreadable session record", "err", err)
			return true, nil
		}
		fn(r)
		return true, nil
	})
}
