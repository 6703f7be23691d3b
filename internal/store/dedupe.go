package store

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// Dedupe: what the broker remembers, for the retry memory, so that a
// retried request is recognised. Each expires (a TTL set by the caller):
//
//	dedupe/<scope>/<client msg id>     a send's client id → its message id
//	ackd/<session>/<message id>        an ack of an id that was not stored (empty)
//	pdedupe/<session>/<client msg id>  a publication's client id → its seq (decimal)
//
// The absence filter (filter.go) answers most lookups of the first two
// without reading Badger.

const (
	dedupePrefix        = "dedupe/"
	ackedPrefix         = "ackd/"
	publishDedupePrefix = "pdedupe/"
)

// ClientID names a send by its client message id within a scope (whose
// namespace the id lives in).
type ClientID struct{ Scope, ID string }

// IsZero reports whether c names no send (a send without a client id).
func (c ClientID) IsZero() bool { return c == ClientID{} }

func (c ClientID) key() string                   { return dedupeKey(c.Scope, c.ID) }
func dedupeKey(scope, clientMsgID string) string { return dedupePrefix + scope + "/" + clientMsgID }
func ackedKey(sid, id string) string             { return ackedPrefix + sid + "/" + id }
func publishDedupeKey(sender, clientMsgID string) string {
	return publishDedupePrefix + sender + "/" + clientMsgID
}

// SentID returns the id of the message committed for c, or ErrNotFound.
func (t *Txn) SentID(c ClientID) (string, error) {
	v, err := t.Get(c.key())
	return string(v), err
}

// PutSent remembers for keep that c was committed as message id.
func (t *Txn) PutSent(c ClientID, id string, keep time.Duration) error {
	return t.SetTTL(c.key(), []byte(id), keep)
}

// Acked reports whether session sid acked message id while it was not
// stored (PutAcked).
func (t *Txn) Acked(sid, id string) (bool, error) { return t.Has(ackedKey(sid, id)) }

// PutAcked remembers for keep that session sid acked message id, not
// stored (any more, or yet).
func (t *Txn) PutAcked(sid, id string, keep time.Duration) error {
	return t.SetTTL(ackedKey(sid, id), nil, keep)
}

// PublishedSeq returns the seq of sender's publication with client id
// clientMsgID, ErrNotFound, or ErrUnreadable.
func (t *Txn) PublishedSeq(sender, clientMsgID string) (uint64, error) {
	v, err := t.Get(publishDedupeKey(sender, clientMsgID))
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(string(v), 10, 64)
	if err != nil {
		return 0, errors.Join(ErrUnreadable, err)
	}
	return n, nil
}

// PutPublished remembers for keep that sender's publication with client
// id clientMsgID got seq.
func (t *Txn) PutPublished(sender, clientMsgID string, seq uint64, keep time.Duration) error {
	return t.SetTTL(publishDedupeKey(sender, clientMsgID), []byte(strconv.FormatUint(seq, 10)), keep)
}

// EachSentScope calls fn with the scope of every remembered send, without
// reading values.
func (t *Txn) EachSentScope(fn func(scope string)) {
	t.Keys(dedupePrefix, func(k string) bool {
		scope, _, _ := strings.Cut(strings.TrimPrefix(k, dedupePrefix), "/")
		fn(scope)
		return true
	})
}
