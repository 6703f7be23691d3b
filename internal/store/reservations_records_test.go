package store

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestReservationRecords: a record reads back as written; an unknown
// resource is not ok; bad keys are refused; a scan covers one project
// ("" every project) in key order, skipping unreadable records; an
// unreadable record read directly is an error naming the resource.
func TestReservationRecords(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	at := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	r1 := Reservation{Project: "p", Resource: "db", Token: 3, Holders: []ReservationHolder{
		{Session: "s1", Name: "w", Shared: true, Token: 3, TTL: time.Minute, Granted: at, Renewed: at, Expires: at.Add(time.Minute)}}}
	r2 := Reservation{Project: "p", Resource: "api", Token: 1}
	r3 := Reservation{Project: "q", Resource: "db", Token: 7}
	update(t, s, func(txn *Txn) error {
		for _, r := range []Reservation{r1, r2, r3} {
			if err := txn.PutReservation(r); err != nil {
				return err
			}
		}
		for _, bad := range []Reservation{{Resource: "x"}, {Project: "p"}, {Project: "p", Resource: "a\x00b"}} {
			if err := txn.PutReservation(bad); err == nil || !strings.Contains(err.Error(), "bad key") {
				t.Errorf("PutReservation(%q, %q) = %v, want a bad key error", bad.Project, bad.Resource, err)
			}
		}
		return txn.Set(reservationKey("p", "broken"), []byte("{"))
	})
	_ = s.View(func(txn *Txn) error {
		got, ok, err := txn.Reservation("p", "db")
		if err != nil || !ok || !reflect.DeepEqual(got, r1) {
			t.Errorf("Reservation(p, db) = %+v, %t, %v; want %+v", got, ok, err, r1)
		}
		if _, ok, err := txn.Reservation("p", "none"); ok || err != nil {
			t.Errorf("Reservation(p, none) ok %t, %v; want not ok, no error", ok, err)
		}
		if _, _, err := txn.Reservation("p", "broken"); err == nil || !strings.Contains(err.Error(), "broken") {
			t.Errorf("Reservation(p, broken) = %v, want an error naming it", err)
		}
		scan := func(project string, limit int) []string {
			var out []string
			if err := txn.ScanReservations(project, func(r Reservation) bool {
				out = append(out, r.Project+"/"+r.Resource)
				return len(out) < limit
			}); err != nil {
				t.Fatal(err)
			}
			return out
		}
		if got := scan("p", 10); !reflect.DeepEqual(got, []string{"p/api", "p/db"}) {
			t.Errorf("scan p: %v", got)
		}
		if got := scan("", 10); !reflect.DeepEqual(got, []string{"p/api", "p/db", "q/db"}) {
			t.Errorf("scan all: %v", got)
		}
		if got := scan("", 1); !reflect.DeepEqual(got, []string{"p/api"}) {
			t.Errorf("scan stopped after one: %v", got)
		}
		return nil
	})
}
