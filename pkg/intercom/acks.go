package intercom

import (
	"context"
	"errors"
	"time"
)

// Acknowledgements a holder owes the broker.
//
// A Session remembers every message it handed on (Messages). Once the
// consumer acks one, the ack is kept until the broker confirms it: it is
// sent again before every re-registration (so the backlog the broker flushes
// after a reconnect no longer holds it), on a backoff timer while it keeps
// failing, and at once when the broker pushes the message again. A message
// pushed again is never handed on twice: if the consumer acked it, it is
// acked again; if the consumer has not acked it yet, it is dropped (the
// consumer's own ack follows).

// maxAckIDs is the most ids one ack request may carry (the broker's limit).
const maxAckIDs = 10000

// shownLimit bounds the ids a Session remembers handing on; the oldest half
// is forgotten past it (acks still owed are kept regardless).
const shownLimit = 20000

// ackState is what a Session knows of one message id (one map for all of
// it: a pushed message costs one lookup, not one per fact).
type ackState uint8

const (
	handedOn ackState = 1 << iota // handed on (Messages), not forgotten since
	consumed                      // handed on and acked by the consumer
	ackOwed                       // acked; the broker has not confirmed it yet
)

// oweLocked marks id's ack owed (and consumed, if it was handed on).
func (s *Session) oweLocked(id string) {
	st := s.acks[id]
	if st&handedOn != 0 {
		st |= consumed
	}
	if st&ackOwed == 0 {
		st |= ackOwed
		s.owed++
	}
	s.acks[id] = st
}

// confirmedLocked records that the broker confirmed id's ack.
func (s *Session) confirmedLocked(id string) {
	st, ok := s.acks[id]
	if !ok || st&ackOwed == 0 {
		return
	}
	s.owed--
	if st &^= ackOwed; st == 0 {
		delete(s.acks, id)
	} else {
		s.acks[id] = st
	}
}

// Ack confirms delivery of messages. An ack that fails is not lost: the
// session keeps it and retries it (before re-registering after a reconnect,
// and on a timer) until the broker confirms it; the error says only that it
// is not confirmed yet.
func (s *Session) Ack(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	s.mu.Lock()
	for _, id := range ids {
		s.oweLocked(id)
	}
	s.mu.Unlock()
	err := s.sendAcks(ctx, ids)
	if err != nil {
		s.retryAcksLater(false)
	}
	return err
}

// PendingAcks is how many acks the broker has not confirmed yet.
func (s *Session) PendingAcks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owed
}

// RetryAcks sends every ack still owed, the session's own and those the
// pending-ack journal holds for it (left by a process that fetched and
// showed messages of this session, see Client.AckShown). Holders that
// receive no pushes (`intercom hold`) call it now and then.
func (s *Session) RetryAcks(ctx context.Context) error {
	err := s.sendAcks(ctx, s.pendingIDs())
	if jerr := s.c.settleJournal(ctx, s.ID()); err == nil {
		err = jerr
	}
	return err
}

// sendAcks acks ids in chunks; each confirmed id stops being owed.
func (s *Session) sendAcks(ctx context.Context, ids []string) error {
	sid := s.ID()
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), maxAckIDs)]
		ids = ids[len(chunk):]
		_, err := s.c.Ack(ctx, sid, chunk...)
		if errors.Is(err, ErrBadRequest) {
			s.c.log.Warn("ack refused; not retried", "session", sid, "err", err)
		} else if err != nil {
			return err
		}
		s.mu.Lock()
		for _, id := range chunk {
			s.confirmedLocked(id)
		}
		s.mu.Unlock()
	}
	return nil
}

func (s *Session) pendingIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, s.owed)
	for id, st := range s.acks {
		if st&ackOwed != 0 {
			ids = append(ids, id)
		}
	}
	return ids
}

// retryAcksLater makes sure the retry loop runs while acks are owed; now
// wakes it at once (the broker pushed an acked message again).
func (s *Session) retryAcksLater(now bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || s.owed == 0 {
		return
	}
	if now {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	if !s.retrying {
		s.retrying = true
		go s.retryLoop()
	}
}

// retryLoop resends owed acks, backing off while they fail, until none is
// owed or the session stops.
func (s *Session) retryLoop() {
	for attempt := 0; ; attempt++ {
		t := time.NewTimer(backoff(attempt))
		select {
		case <-s.kick:
		case <-t.C:
		case <-s.stopped:
		}
		t.Stop()
		s.mu.Lock()
		if s.done || s.owed == 0 {
			s.retrying = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), s.c.timeout)
		err := s.sendAcks(ctx, s.pendingIDs())
		cancel()
		if err == nil {
			attempt = -1
		} else {
			s.c.log.Debug("ack retry", "session", s.ID(), "err", err)
		}
	}
}

// ackBeforeRegister sends owed acks ahead of a (re-)registration, whose
// backlog flush would otherwise push those messages again.
func (s *Session) ackBeforeRegister(ctx context.Context) {
	if err := s.sendAcks(ctx, s.pendingIDs()); err != nil {
		s.c.log.Warn("acks not confirmed before re-registering; retrying", "session", s.ID(), "err", err)
		s.retryAcksLater(false)
	}
	if err := s.c.settleJournal(ctx, s.ID()); err != nil {
		s.c.log.Debug("journaled acks not confirmed", "session", s.ID(), "err", err)
	}
}

// admit decides what to do with a pushed message: hand it on (true), or,
// if this session handed it on before, not again, re-acking it when the
// consumer acked it.
func (s *Session) admitLocked(id string) (handOn, reack bool) {
	if st := s.acks[id]; st&(handedOn|ackOwed) != 0 {
		if st&(consumed|ackOwed) != 0 {
			s.oweLocked(id)
			return false, true
		}
		return false, false
	}
	s.acks[id] = handedOn
	s.order = append(s.order, id)
	if len(s.order) > shownLimit {
		for _, id := range s.order[:shownLimit/2] {
			s.forgetLocked(id)
		}
		s.order = append([]string(nil), s.order[shownLimit/2:]...)
	}
	return true, false
}

// forgetLocked forgets that id was handed on, keeping an owed ack.
func (s *Session) forgetLocked(id string) {
	if st := s.acks[id]; st&ackOwed != 0 {
		s.acks[id] = ackOwed
	} else {
		delete(s.acks, id)
	}
}
