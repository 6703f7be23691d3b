package store

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Reservations (package broker's reservations.go holds the rules): one
// record per reserved resource, a path or glob relative to a project root,
// holding its current holders and the highest fencing token ever granted
// for it, and a timeline of grants and releases.
//
//	resv/<project>\x00<resource>                 the resource's Reservation
//	resvh/<project>\x00<resource>\x00<nanos>     one ReservationEvent (TTL)
//
// A record stays when its last holder lets go: its Token is the high-water
// mark the next grant must exceed, across broker restarts.

// The reservation key families.
const (
	reservationsPrefix       = "resv/"
	reservationHistoryPrefix = "resvh/"
)

// Reservation is the stored state of one resource.
type Reservation struct {
	Project  string              `json:"project"`
	Resource string              `json:"resource"`
	Token    uint64              `json:"token"` // the highest token granted, ever
	Holders  []ReservationHolder `json:"holders,omitempty"`
}

// ReservationHolder is one session's lease on a resource.
type ReservationHolder struct {
	Session string        `json:"session"`
	Name    string        `json:"name"`
	Shared  bool          `json:"shared,omitempty"`
	Reason  string        `json:"reason,omitempty"`
	Token   uint64        `json:"token"`
	TTL     time.Duration `json:"ttl"`
	Granted time.Time     `json:"granted"`
	Renewed time.Time     `json:"renewed"`
	Expires time.Time     `json:"expires"`
}

// ReservationEvent is one entry of a resource's timeline.
type ReservationEvent struct {
	At       time.Time `json:"at"`
	Project  string    `json:"project"`
	Resource string    `json:"resource"`
	Event    string    `json:"event"` // grant, renew, release, expire, gone
	Session  string    `json:"session"`
	Name     string    `json:"name,omitempty"`
	Token    uint64    `json:"token,omitempty"`
	Reason   string    `json:"reason,omitempty"`
}

func reservationKey(project, resource string) string {
	return reservationsPrefix + project + "\x00" + resource
}

// reservationProjectPrefix is the prefix of project's records; "" means all.
func reservationProjectPrefix(project string) string {
	if project == "" {
		return reservationsPrefix
	}
	return reservationsPrefix + project + "\x00"
}

func reservationEventPrefix(project, resource string) string {
	return reservationHistoryPrefix + project + "\x00" + resource + "\x00"
}

// Reservation reads the record of resource in project; ok is false when
// it was never reserved.
func (t *Txn) Reservation(project, resource string) (r Reservation, ok bool, err error) {
	v, err := t.Get(reservationKey(project, resource))
	if err == ErrNotFound {
		return Reservation{}, false, nil
	}
	if err != nil {
		return Reservation{}, false, err
	}
	if err := json.Unmarshal(v, &r); err != nil {
		return Reservation{}, false, fmt.Errorf("reservation %s: %w", resource, err)
	}
	return r, true, nil
}

// PutReservation writes r (its Project and Resource name the key).
func (t *Txn) PutReservation(r Reservation) error {
	if r.Project == "" || r.Resource == "" || strings.Contains(r.Resource, "\x00") {
		return fmt.Errorf("put reservation: bad key %q %q", r.Project, r.Resource)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return t.Set(reservationKey(r.Project, r.Resource), data)
}

// ScanReservations calls fn with every record of project ("" for every
// project), in key order, until fn returns false. Unreadable records are
// skipped.
func (t *Txn) ScanReservations(project string, fn func(Reservation) bool) error {
	return t.Scan(reservationProjectPrefix(project), func(_ string, v []byte) (bool, error) {
		var r Reservation
		if json.Unmarshal(v, &r) != nil {
			return true, nil
		}
		return fn(r), nil
	})
}

// AddReservationEvent appends ev to its resource's timeline, kept for keep.
func (t *Txn) AddReservationEvent(ev ReservationEvent, keep time.Duration) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	// Events of one transaction may share a time (a lease ended and the
	// grant that took over): the later one goes a nanosecond on.
	for n := ev.At.UnixNano(); ; n++ {
		key := fmt.Sprintf("%s%020d", reservationEventPrefix(ev.Project, ev.Resource), n)
		if has, err := t.Has(key); err != nil {
			return err
		} else if !has {
			return t.SetTTL(key, data, keep)
		}
	}
}

// ReservationHistory calls fn with the timeline of resource in project,
// oldest first.
func (t *Txn) ReservationHistory(project, resource string, fn func(ReservationEvent) bool) error {
	return t.Scan(reservationEventPrefix(project, resource), func(_ string, v []byte) (bool, error) {
		var ev ReservationEvent
		if json.Unmarshal(v, &ev) != nil {
			return true, nil
		}
		return fn(ev), nil
	})
}

// reservationTokenKey holds the highest fencing token granted for any
// resource (decimal): tokens increase across every grant, so a token names
// one grant wherever it is checked.
const reservationTokenKey = "meta/resvtoken"

// NextReservationToken returns the token of a new grant, one above every
// token granted before, and records it as the high-water mark.
func (t *Txn) NextReservationToken() (uint64, error) {
	var n uint64
	v, err := t.Get(reservationTokenKey)
	switch {
	case err == nil:
		if _, err := fmt.Sscan(string(v), &n); err != nil {
			return 0, fmt.Errorf("reservation token: %w", err)
		}
	case err != ErrNotFound:
		return 0, err
	}
	n++
	return n, t.Set(reservationTokenKey, []byte(fmt.Sprint(n)))
}
