package store

import (
	"strings"
	"testing"
	"time"
)

// TestKeyFamiliesApart: every family's keys are distinct and none lies
// under another family's prefix, so that no scan reads another concept.
func TestKeyFamiliesApart(t *testing.T) {
	t.Parallel()
	keys := map[string]string{
		"session":      sessionKey("x"),
		"inbox":        InboxSlot("x", 1).key(),
		"outbox":       OutboxSlot("x", 1).key(),
		"log":          logKey(1),
		"logack":       logAckKey(1, 2),
		"acked":        ackedKey("s", "x"),
		"dedupe":       dedupeKey("s", "x"),
		"pdedupe":      publishDedupeKey("s", "x"),
		"record":       topicRecordKey("t", "x"),
		"subscription": topicSubKey("t", "x"),
		"host":         remoteHostKey("x"),
		"trace":        traceKey("x"),
		"event":        traceEventKey("x", time.Unix(1, 0), false),
		"seq":          seqKey,
		"format":       formatKey,
		"history":      historyPrefix + HistoryCursor(1),
		"histepoch":    historyEpochKey,
		"reservation":  reservationKey("p", "x"),
		"resvtoken":    reservationTokenKey,
	}
	prefixes := map[string]string{
		"session": sessionPrefix, "inbox": inboxesPrefix, "outbox": outboxesPrefix, "log": logPrefix, "logack": logAckPrefix, "acked": ackedPrefix,
		"dedupe": dedupePrefix, "pdedupe": publishDedupePrefix, "record": topicRecordsPrefix,
		"subscription": topicSubsPrefix, "host": remoteHostsPrefix, "trace": tracePrefix, "event": traceEventsPrefix,
		"history": historyPrefix, "reservation": reservationsPrefix,
	}
	seen := map[string]string{}
	for family, k := range keys {
		if other, dup := seen[k]; dup {
			t.Errorf("key %q built by %s and %s", k, family, other)
		}
		seen[k] = family
		for pf, p := range prefixes {
			if under := strings.HasPrefix(k, p); under != (pf == family) {
				t.Errorf("%s key %q under %s prefix %q: %v", family, k, pf, p, under)
			}
		}
	}
}

func TestTraceEventKeys(t *testing.T) {
	t.Parallel()
	at := time.Unix(1700000000, 123456789).UTC()
	for _, fetch := range []bool{false, true} {
		k := traceEventKey("m1", at, fetch)
		got, gotFetch, ok := parseTraceEvent("m1", k)
		if !ok || !got.Equal(at) || gotFetch != fetch {
			t.Errorf("parseTraceEvent(%q) = %v, %v, %v; want %v, %v", k, got, gotFetch, ok, at, fetch)
		}
	}
	for _, bad := range []string{"tev/m1/x-p", "tev/m1/12-q", "tev/m1/12", "tev/m2/12-p"} {
		if _, _, ok := parseTraceEvent("m1", bad); ok {
			t.Errorf("parseTraceEvent(%q) accepted", bad)
		}
	}
}
