package store

import (
	"testing"
	"time"
)

func TestKeysOwnersAndOrder(t *testing.T) {
	t.Parallel()
	if h := RemoteHostOf(RemoteHostKey("h.lan")); h != "h.lan" {
		t.Errorf("RemoteHostOf = %q", h)
	}
	distinct := map[string]bool{}
	for _, k := range []string{sessionKey("x"), ackedKey("s", "x"), dedupeKey("s", "x"), publishDedupeKey("s", "x"), TraceKey("x"), SeqKey, FormatKey} {
		if distinct[k] {
			t.Errorf("key %q built twice", k)
		}
		distinct[k] = true
	}
}

func TestTraceEventKeys(t *testing.T) {
	t.Parallel()
	at := time.Unix(1700000000, 123456789).UTC()
	for _, fetch := range []bool{false, true} {
		k := TraceEventKey("m1", at, fetch)
		got, gotFetch, ok := ParseTraceEvent("m1", k)
		if !ok || !got.Equal(at) || gotFetch != fetch {
			t.Errorf("ParseTraceEvent(%q) = %v, %v, %v; want %v, %v", k, got, gotFetch, ok, at, fetch)
		}
	}
	for _, bad := range []string{"tev/m1/x-p", "tev/m1/12-q", "tev/m1/12", "tev/m2/12-p"} {
		if _, _, ok := ParseTraceEvent("m1", bad); ok {
			t.Errorf("ParseTraceEvent(%q) accepted", bad)
		}
	}
}
