// Package ackjournal is the pending-ack journal: acks of messages that a
// fetching process (a harness hook, `intercom wait`, `intercom inbox`)
// showed but could not get confirmed before it exited. Such a process lives
// for one call, so the ack it owes is written down where the session's
// other processes find it: the next fetch acks those messages instead of
// showing them again, and the session's holder (`intercom hold`, any held
// Session) retries them. One empty file per message:
// <home>/acks/<session id>/<message id>.
//
// Both broker clients keep it: pkg/intercom and the hook's own
// (internal/hookclient).
package ackjournal

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Journal is the journal of one home, under its acks directory
// (paths.Layout.AcksDir).
type Journal struct{ Dir string }

// dir is the directory of sid's journaled acks, "" when sid cannot name
// one safely.
func (j Journal) dir(sid string) string {
	if j.Dir == "" || wire.ValidID(sid) != nil {
		return ""
	}
	return filepath.Join(j.Dir, sid)
}

// Add writes ids down as owed for sid.
func (j Journal) Add(sid string, ids []string) error {
	dir := j.dir(sid)
	if dir == "" {
		return nil
	}
	if err := paths.EnsurePrivateDir(dir); err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		if !plainName(id) {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, id), os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			err = f.Close()
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// List returns the ids journaled for sid.
func (j Journal) List(sid string) []string {
	dir := j.dir(sid)
	if dir == "" {
		return nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	ids := make([]string, 0, len(ents))
	for _, e := range ents {
		if plainName(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids
}

// Remove takes ids (confirmed) out of sid's journal.
func (j Journal) Remove(sid string, ids []string) {
	dir := j.dir(sid)
	if dir == "" {
		return
	}
	for _, id := range ids {
		if plainName(id) {
			_ = os.Remove(filepath.Join(dir, id))
		}
	}
	_ = os.Remove(dir) // only when empty
}

// Without is msgs without those whose ack sid still owes (journaled): they
// were shown already.
func (j Journal) Without(sid string, msgs []wire.Message) []wire.Message {
	owed := j.List(sid)
	if len(owed) == 0 {
		return msgs
	}
	skip := make(map[string]bool, len(owed))
	for _, id := range owed {
		skip[id] = true
	}
	out := msgs[:0]
	for _, m := range msgs {
		if !skip[m.ID] {
			out = append(out, m)
		}
	}
	return out
}

// plainName reports whether a message id is a plain file name.
func plainName(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '.' {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
