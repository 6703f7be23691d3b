package ackjournal

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Owed acks are one private file per message; ids that are not plain file
// names and sessions that cannot name a directory are never written; what
// is removed leaves the journal, and the session's directory goes with its
// last entry.
func TestJournal(t *testing.T) {
	j := Journal{Dir: filepath.Join(t.TempDir(), "acks")}
	if err := j.Add("session-1", []string{"m1", "m2", "../evil", ".hidden", ""}); err != nil {
		t.Fatal(err)
	}
	got := j.List("session-1")
	slices.Sort(got)
	if !slices.Equal(got, []string{"m1", "m2"}) {
		t.Fatalf("List = %q, want m1 m2", got)
	}
	if fi, err := os.Stat(filepath.Join(j.Dir, "session-1")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the session's journal directory: %v, %v; want 0700", fi, err)
	}
	msgs := j.Without("session-1", []wire.Message{{ID: "m1"}, {ID: "m3"}})
	if len(msgs) != 1 || msgs[0].ID != "m3" {
		t.Fatalf("Without = %+v, want only m3", msgs)
	}
	if err := j.Add("../session-2", []string{"m1"}); err != nil || j.List("../session-2") != nil {
		t.Fatalf("a session id that is no directory name was journaled: %v", err)
	}
	j.Remove("session-1", []string{"m1", "m2"})
	if _, err := os.Stat(filepath.Join(j.Dir, "session-1")); !os.IsNotExist(err) {
		t.Fatalf("the emptied journal directory is still there: %v", err)
	}
	if got := j.Without("session-1", []wire.Message{{ID: "m1"}}); len(got) != 1 {
		t.Fatalf("Without with nothing owed dropped messages: %+v", got)
	}
}

// An id with a character that is not plain is skipped; a journal whose
// directory cannot be made says so; removing from a session that cannot
// name a directory does nothing.
func TestJournalRefusals(t *testing.T) {
	dir := t.TempDir()
	j := Journal{Dir: filepath.Join(dir, "acks")}
	if err := j.Add("session-1", []string{"m 1", "m/2", "m3"}); err != nil {
		t.Fatal(err)
	}
	if got := j.List("session-1"); !slices.Equal(got, []string{"m3"}) {
		t.Fatalf("List = %q, want only m3", got)
	}
	j.Remove("../session-1", []string{"m3"})
	if got := j.List("session-1"); !slices.Equal(got, []string{"m3"}) {
		t.Fatalf("after a Remove for an unsafe session id: %q, want m3 kept", got)
	}
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := (Journal{Dir: file}).Add("session-1", []string{"m1"}); err == nil {
		t.Fatal("Add under a file instead of a directory: no error")
	}
}
