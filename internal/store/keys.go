package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The key layout: every key the broker stores, by prefix. Values are JSON
// unless noted. Changing a key or a value's meaning is a format change
// (FormatVersion).
//
//	meta/format                        format version (decimal)
//	meta/seq                           sequence lease (decimal, Sequence)
//	sess/<session>                     a session's record
//	inbox/<session>/<seq>              a stored, unacknowledged message
//	outbox/<host>/<seq>                a message waiting for a bridged host
//	ackd/<session>/<message id>        an ack of an id not stored (TTL, empty)
//	dedupe/<scope>/<client msg id>     a send's client id -> message id (TTL)
//	pdedupe/<session>/<client msg id>  a publication's client id -> seq (TTL)
//	trec/<topic>\x00<session>          a sender's current topic record
//	tsub/<topic>\x00<session>          a subscription
//	rhost/<host>                       a bridged host once seen (empty)
//	trace/<message id>                 an acked message's timeline (TTL)
//	tev/<message id>/<nanos>-<p|f>     a push or fetch of a message (TTL, empty)
//
// <seq> is zero-padded to 20 digits, so keys sort in sequence order. Where
// each stored message is, by id, is not stored: the message index is
// rebuilt in memory from the inbox and outbox entries (msgindex.go).

// Prefixes that are scanned whole.
const (
	RemoteHostsPrefix = "rhost/"
)

// FormatKey holds the store's format version as a decimal string. Stores
// written before the key existed carry none: their layout is format 1.
const FormatKey = "meta/format"

// SeqKey holds the highest sequence number leased (Sequence).
const SeqKey = "meta/seq"

// RemoteHostKey marks host as bridged once.
func RemoteHostKey(host string) string { return RemoteHostsPrefix + host }

// RemoteHostOf returns the host of a RemoteHostKey.
func RemoteHostOf(key string) string { return strings.TrimPrefix(key, RemoteHostsPrefix) }

// TraceKey is the stored timeline of acked message id.
func TraceKey(id string) string { return "trace/" + id }

// TraceEventPrefix is the prefix of message id's push and fetch events.
func TraceEventPrefix(id string) string { return "tev/" + id + "/" }

// TraceEventKey is the event of message id pushed (or fetched) at.
func TraceEventKey(id string, at time.Time, fetch bool) string {
	kind := "p"
	if fetch {
		kind = "f"
	}
	return fmt.Sprintf("%s%020d-%s", TraceEventPrefix(id), at.UnixNano(), kind)
}

// ParseTraceEvent reads an event key of message id.
func ParseTraceEvent(id, key string) (at time.Time, fetch, ok bool) {
	rest, found := strings.CutPrefix(key, TraceEventPrefix(id))
	nanos, kind, cut := strings.Cut(rest, "-")
	n, err := strconv.ParseInt(nanos, 10, 64)
	if !found || !cut || err != nil || (kind != "p" && kind != "f") {
		return time.Time{}, false, false
	}
	return time.Unix(0, n).UTC(), kind == "f", true
}
