package broker

import (
	"os"
	"sync"
	"time"

	"github.com/intercom-dev/intercom/internal/store"
)

// reservationTable holds, in memory, the expiry of every live lease as the
// holders' activity renews it (by token: a token names one grant). A
// renewal reaches the store now and then (prune), so that a restart loses
// little of it.
type reservationTable struct {
	grace     time.Duration
	mu        sync.Mutex
	leases    map[uint64]*liveLease
	bySession map[string]map[uint64]bool
}

type liveLease struct {
	sid     string
	ttl     time.Duration
	expires time.Time
}

// newReservationTable reads the leases stored in st.
func newReservationTable(st *store.Store) (*reservationTable, error) {
	t := &reservationTable{grace: DefaultReservationGrace, leases: map[uint64]*liveLease{}, bySession: map[string]map[uint64]bool{}}
	if d, err := time.ParseDuration(os.Getenv("INTERCOM_RESERVATION_GRACE")); err == nil && d > 0 {
		t.grace = d
	}
	err := st.View(func(txn *store.Txn) error {
		return txn.ScanReservations("", func(r store.Reservation) bool {
			for _, h := range r.Holders {
				t.track(h)
			}
			return true
		})
	})
	return t, err
}

// track remembers holder h's lease (a grant, a renewal, a stored one).
func (t *reservationTable) track(h store.ReservationHolder) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.leases[h.Token]
	if l == nil {
		l = &liveLease{sid: h.Session}
		t.leases[h.Token] = l
		if t.bySession[h.Session] == nil {
			t.bySession[h.Session] = map[uint64]bool{}
		}
		t.bySession[h.Session][h.Token] = true
	}
	l.ttl = h.TTL
	if h.Expires.After(l.expires) {
		l.expires = h.Expires
	}
}

// forget drops the lease of token (released or ended).
func (t *reservationTable) forget(token uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.leases[token]; l != nil {
		delete(t.bySession[l.sid], token)
		if len(t.bySession[l.sid]) == 0 {
			delete(t.bySession, l.sid)
		}
		delete(t.leases, token)
	}
}

// touch is activity of session sid: each of its leases still live is
// renewed for its TTL from now. An expired lease stays expired.
func (t *reservationTable) touch(sid string) {
	if t == nil || sid == "" {
		return
	}
	now := time.Now().UTC()
	t.mu.Lock()
	defer t.mu.Unlock()
	for tok := range t.bySession[sid] {
		if l := t.leases[tok]; l != nil && now.Before(l.expires) {
			l.expires = now.Add(l.ttl)
		}
	}
}

// expires is when holder h's lease ends without more activity.
func (t *reservationTable) expires(h store.ReservationHolder) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.leases[h.Token]; l != nil && l.expires.After(h.Expires) {
		return l.expires
	}
	return h.Expires
}

// reservationSweepEvery is how often ended leases are dropped and
// renewals persisted.
func (b *Broker) reservationSweepEvery() time.Duration {
	return min(max(b.resv.grace/4, 50*time.Millisecond), 10*time.Second)
}

// armReservationSweep schedules the next sweep of the leases.
func (b *Broker) armReservationSweep() {
	b.tasks.After(b.reservationSweepEvery(), b.sweepReservations)
}

// sweepReservations drops ended leases (recording expire or gone) and
// persists renewals, then re-arms itself.
func (b *Broker) sweepReservations() {
	defer b.armReservationSweep()
	if b.st.Err() != nil {
		return
	}
	var due bool
	now := time.Now().UTC()
	_ = b.st.View(func(txn *store.Txn) error {
		return txn.ScanReservations("", func(r store.Reservation) bool {
			for _, h := range r.Holders {
				st := b.lease(h, now)
				if !st.live || st.expires.Sub(h.Expires) >= h.TTL/20 {
					due = true
					return false
				}
			}
			return true
		})
	})
	if !due {
		return
	}
	err := b.cmt.Wait(func(txn *store.Txn) error {
		return b.pruneWhere(txn, "", time.Now().UTC(), func(string) bool { return true })
	})
	if err != nil {
		b.log.Warn("sweep reservations", "err", err)
	}
}
