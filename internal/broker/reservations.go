package broker

import (
	"slices"
	"sort"
	"time"

	"github.com/intercom-dev/intercom/internal/reservations"
	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Reservations: leases on project paths with fencing tokens (see
// docs/reservations.md). The records live in the store (store.Reservation);
// every decision is taken inside a committer transaction, so two requests
// for one path are decided one after the other and exactly one wins.
//
// A lease is live until the first of:
//   - its expiry: granted or renewed + TTL. Renewing is the holder's
//     activity (its state reports, its hooks' edit checks, reserve again);
//   - the grace period after its holder's session is gone: disconnected
//     (or forgotten) for ReservationGrace, counted from the later of the
//     disconnect and this broker's start, so a restart never shortens it.
//
// A busy holder is connected; only a disconnected one loses its lease to
// the grace period.

// DefaultReservationGrace is how long a disconnected holder keeps its
// leases; INTERCOM_RESERVATION_GRACE (a Go duration) sets another.
const DefaultReservationGrace = 2 * time.Minute

// reservationHistoryKeep is how long grants and releases are remembered.
const reservationHistoryKeep = 7 * 24 * time.Hour

// leaseState is what a holder's lease is at one moment.
type leaseState struct {
	live      bool
	ended     string    // expire or gone, when not live
	expires   time.Time // with the holder's activity counted
	connected bool
}

// lease judges holder h at now.
func (b *Broker) lease(h store.ReservationHolder, now time.Time) leaseState {
	st := leaseState{expires: b.resv.expires(h)}
	s, known := b.sessions.get(h.Session)
	st.connected = known && s.Connected
	if !now.Before(st.expires) {
		st.ended = "expire"
		return st
	}
	if !st.connected {
		since := h.Renewed
		if known && s.LastSeen.After(since) {
			since = s.LastSeen
		}
		if b.start.After(since) {
			since = b.start
		}
		if now.Sub(since) >= b.resv.grace {
			st.ended = "gone"
			return st
		}
	}
	st.live = true
	return st
}

// prune drops r's holders whose leases ended, recording why in the
// history, and renews the expiry stored for active ones; it reports
// whether r changed. The judged state of each kept holder is in states.
func (b *Broker) prune(txn *store.Txn, r *store.Reservation, now time.Time) (changed bool, states []leaseState, err error) {
	kept := r.Holders[:0:0]
	for _, h := range r.Holders {
		st := b.lease(h, now)
		if !st.live {
			changed = true
			b.resv.forget(h.Token)
			if err := txn.AddReservationEvent(store.ReservationEvent{At: now, Project: r.Project, Resource: r.Resource, Event: st.ended,
				Session: h.Session, Name: h.Name, Token: h.Token}, reservationHistoryKeep); err != nil {
				return false, nil, err
			}
			continue
		}
		if st.expires.Sub(h.Expires) >= h.TTL/20 { // persist a renewal now and then, not at every touch
			h.Expires, h.Renewed, changed = st.expires, st.expires.Add(-h.TTL), true
		}
		kept = append(kept, h)
		states = append(states, st)
	}
	r.Holders = kept
	return changed, states, nil
}

func info(r store.Reservation, h store.ReservationHolder, st leaseState) wire.ReservationInfo {
	return wire.ReservationInfo{Project: r.Project, Path: r.Resource, SessionID: h.Session, Name: h.Name, Shared: h.Shared,
		Reason: h.Reason, Token: h.Token, Granted: h.Granted, Renewed: h.Renewed, Expires: st.expires, Connected: st.connected}
}

// conflicts returns the live leases in project, not held by sid, that
// stand in the way of p: every one overlapping p, except shared ones when
// shared is asked for.
func (b *Broker) conflicts(txn *store.Txn, project, sid, p string, shared bool, now time.Time) ([]wire.ReservationConflict, error) {
	var out []wire.ReservationConflict
	err := txn.ScanReservations(project, func(r store.Reservation) bool {
		if !reservations.Overlap(r.Resource, p) {
			return true
		}
		for _, h := range r.Holders {
			if h.Session == sid || (shared && h.Shared) {
				continue
			}
			if st := b.lease(h, now); st.live {
				out = append(out, wire.ReservationConflict{Path: p, Held: info(r, h, st)})
			}
		}
		return true
	})
	return out, err
}

func (b *Broker) reserve(req wire.ReserveRequest) (*wire.ReserveReply, error) {
	if err := wire.ValidateReserve(&req); err != nil {
		return nil, err
	}
	s, ok := b.sessions.get(req.SessionID)
	if !ok {
		return nil, wire.Errorf(wire.CodeNotFound, "reserve: no session with id %q", req.SessionID)
	}
	if s.Ephemeral {
		return nil, wire.Errorf(wire.CodeBadRequest, "reserve: an ephemeral session cannot hold a reservation; pass --session")
	}
	ttl := req.TTL
	if ttl == 0 {
		ttl = wire.DefaultReservationTTL
	}
	b.resv.touch(req.SessionID)
	out := &wire.ReserveReply{}
	err := b.cmt.Wait(func(txn *store.Txn) error {
		*out = wire.ReserveReply{}
		now := time.Now().UTC()
		for _, p := range req.Paths {
			c, err := b.conflicts(txn, req.Project, req.SessionID, p, req.Shared, now)
			if err != nil {
				return err
			}
			out.Refused = append(out.Refused, c...)
		}
		if len(out.Refused) > 0 {
			return nil // all or nothing
		}
		overlaps := func(res string) bool {
			return slices.ContainsFunc(req.Paths, func(p string) bool { return reservations.Overlap(res, p) })
		}
		if err := b.pruneWhere(txn, req.Project, now, overlaps); err != nil {
			return err
		}
		for _, p := range req.Paths {
			r, _, err := txn.Reservation(req.Project, p)
			if err != nil {
				return err
			}
			r.Project, r.Resource = req.Project, p
			if _, _, err := b.prune(txn, &r, now); err != nil {
				return err
			}
			h, err := b.grant(txn, &r, req, s.Name, ttl, now)
			if err != nil {
				return err
			}
			if err := txn.PutReservation(r); err != nil {
				return err
			}
			out.Granted = append(out.Granted, info(r, h, leaseState{expires: h.Expires, connected: s.Connected}))
		}
		return nil
	})
	if err != nil {
		return nil, classify(err)
	}
	return out, nil
}

// pruneWhere prunes the records of project ("" for all) whose resource
// keep says, writing those that changed: the leases a grant takes over end
// in their history first, and the sweep ends the rest.
func (b *Broker) pruneWhere(txn *store.Txn, project string, now time.Time, keep func(resource string) bool) error {
	var some []store.Reservation
	if err := txn.ScanReservations(project, func(r store.Reservation) bool {
		if keep(r.Resource) {
			some = append(some, r)
		}
		return true
	}); err != nil {
		return err
	}
	for _, r := range some {
		changed, _, err := b.prune(txn, &r, now)
		if err != nil {
			return err
		}
		if changed {
			if err := txn.PutReservation(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// grant renews sid's lease on r, or grants a new one with the next token.
// The other holders left are shared ones (a new exclusive lease would have
// been refused) or, for an exclusive renewal, none.
func (b *Broker) grant(txn *store.Txn, r *store.Reservation, req wire.ReserveRequest, name string, ttl time.Duration, now time.Time) (store.ReservationHolder, error) {
	for i, h := range r.Holders {
		if h.Session != req.SessionID {
			continue
		}
		h.Shared, h.TTL, h.Renewed, h.Expires, h.Name = req.Shared, ttl, now, now.Add(ttl), name
		if req.Reason != "" {
			h.Reason = req.Reason
		}
		r.Holders[i] = h
		b.resv.track(h)
		return h, nil
	}
	tok, err := txn.NextReservationToken()
	if err != nil {
		return store.ReservationHolder{}, err
	}
	r.Token = tok
	h := store.ReservationHolder{Session: req.SessionID, Name: name, Shared: req.Shared, Reason: req.Reason, Token: tok,
		TTL: ttl, Granted: now, Renewed: now, Expires: now.Add(ttl)}
	r.Holders = append(r.Holders, h)
	b.resv.track(h)
	return h, txn.AddReservationEvent(store.ReservationEvent{At: now, Project: r.Project, Resource: r.Resource, Event: "grant",
		Session: h.Session, Name: name, Token: tok, Reason: req.Reason}, reservationHistoryKeep)
}

func (b *Broker) releaseReservations(req wire.ReleaseRequest) (*wire.ReleaseReply, error) {
	if req.SessionID == "" {
		return nil, wire.Errorf(wire.CodeBadRequest, "release: no session: run it as an agent's session or pass --session")
	}
	if !req.All && len(req.Paths) == 0 {
		return nil, wire.Errorf(wire.CodeBadRequest, "release: name a path or --all")
	}
	want := map[string]bool{}
	for _, p := range req.Paths {
		c, err := wire.CleanReservationPath(p)
		if err != nil {
			return nil, err
		}
		want[c] = true
	}
	out := &wire.ReleaseReply{}
	err := b.cmt.Wait(func(txn *store.Txn) error {
		*out = wire.ReleaseReply{}
		now := time.Now().UTC()
		var changed []store.Reservation
		err := txn.ScanReservations(req.Project, func(r store.Reservation) bool {
			if !req.All && !want[r.Resource] {
				return true
			}
			kept := r.Holders[:0:0]
			for _, h := range r.Holders {
				if h.Session == req.SessionID {
					out.Released = append(out.Released, info(r, h, leaseState{expires: h.Expires}))
					b.resv.forget(h.Token)
					continue
				}
				kept = append(kept, h)
			}
			if len(kept) != len(r.Holders) {
				r.Holders = kept
				changed = append(changed, r)
			}
			return true
		})
		if err != nil {
			return err
		}
		for _, r := range changed {
			if err := txn.PutReservation(r); err != nil {
				return err
			}
		}
		for _, ri := range out.Released {
			if err := txn.AddReservationEvent(store.ReservationEvent{At: now, Project: ri.Project, Resource: ri.Path, Event: "release",
				Session: ri.SessionID, Name: ri.Name, Token: ri.Token}, reservationHistoryKeep); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, classify(err)
	}
	return out, nil
}

func (b *Broker) reservationsOf(req wire.ReservationsRequest) (*wire.ReservationsReply, error) {
	out := &wire.ReservationsReply{Reservations: []wire.ReservationInfo{}}
	var check []string
	for _, p := range req.Check {
		c, err := wire.CleanReservationPath(p)
		if err != nil {
			return nil, err
		}
		check = append(check, c)
	}
	b.resv.touch(req.SessionID) // a holder's own edit check renews its leases
	now := time.Now().UTC()
	err := b.st.View(func(txn *store.Txn) error {
		if req.History != "" {
			p, err := wire.CleanReservationPath(req.History)
			if err != nil {
				return err
			}
			return txn.ReservationHistory(req.Project, p, func(ev store.ReservationEvent) bool {
				out.History = append(out.History, wire.ReservationEvent{At: ev.At, Path: ev.Resource, Event: ev.Event,
					SessionID: ev.Session, Name: ev.Name, Token: ev.Token, Reason: ev.Reason})
				return true
			})
		}
		for _, p := range check {
			c, err := b.conflicts(txn, req.Project, req.SessionID, p, false, now)
			if err != nil {
				return err
			}
			out.Blocked = append(out.Blocked, c...)
		}
		return txn.ScanReservations(req.Project, func(r store.Reservation) bool {
			if req.Path != "" && !reservations.Overlap(r.Resource, req.Path) {
				return true
			}
			for _, h := range r.Holders {
				st := b.lease(h, now)
				if !st.live {
					continue
				}
				ri := info(r, h, st)
				if len(check) > 0 {
					if req.Token != 0 && h.Token == req.Token && reservations.Overlap(r.Resource, check[0]) &&
						(req.SessionID == "" || h.Session == req.SessionID) {
						out.Current = true
					}
					if !reservations.Overlap(r.Resource, check[0]) {
						continue
					}
				}
				out.Reservations = append(out.Reservations, ri)
			}
			return true
		})
	})
	if err != nil {
		return nil, classify(err)
	}
	sort.Slice(out.Reservations, func(i, j int) bool {
		a, c := out.Reservations[i], out.Reservations[j]
		if a.Path != c.Path {
			return a.Path < c.Path
		}
		return a.Token < c.Token
	})
	return out, nil
}
