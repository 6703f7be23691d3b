package spawn

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestLogTail(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := "old line\n"
	for _, tc := range []struct {
		name, text string
		from       int64
		want       string
	}{
		{"missing", "", -1, ""},
		{"empty", "", 0, ""},
		{"new lines only", old + "one\ntwo\n", int64(len(old)), "one | two"},
		{"last three", "a\nb\nc\nd\ne\n", 0, "c | d | e"},
		{"rotated: all of it is new", "fresh\n", 1000, "fresh"},
	} {
		path := filepath.Join(dir, "nothing-here")
		if tc.from >= 0 {
			path = write(tc.name, tc.text)
		}
		if got := logTail(path, max(tc.from, 0)); got != tc.want {
			t.Errorf("%s: logTail = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestBrokerPath(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "my-broker")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("INTERCOM_BROKER", "")
	if got, err := BrokerPath(bin); err != nil || got != bin {
		t.Errorf("BrokerPath(configured) = %q, %v; want %q", got, err, bin)
	}
	if _, err := BrokerPath(filepath.Join(dir, "absent")); err == nil {
		t.Error("BrokerPath of a missing configured command: no error")
	}
	t.Setenv("INTERCOM_BROKER", bin)
	if got, err := BrokerPath(""); err != nil || got != bin {
		t.Errorf("BrokerPath with INTERCOM_BROKER = %q, %v; want %q", got, err, bin)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if got, err := BrokerPath(other); err != nil || got != other {
		t.Errorf("BrokerPath: the configured command %q must win over INTERCOM_BROKER, got %q, %v", other, got, err)
	}
}

func TestAcquireRecordsTheHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spawn.lock")
	release, err := acquire(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || lines[0] != strconv.Itoa(os.Getpid()) {
		t.Fatalf("lock file %q: want this pid and a time", data)
	}
	if _, err := strconv.ParseInt(lines[1], 10, 64); err != nil {
		t.Fatalf("lock file's second line %q is not a time in ms", lines[1])
	}
	release()
	again, err := acquire(t.Context(), path)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	again()
}
