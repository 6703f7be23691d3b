package broker

import (
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/store"
)

// Activity renews a live lease from now, and never revives an expired one.
func TestReservationActivityRenewsOnlyLiveLeases(t *testing.T) {
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tab, err := newReservationTable(st)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	live := store.ReservationHolder{Session: "a", Token: 1, TTL: time.Hour, Expires: now.Add(time.Minute)}
	dead := store.ReservationHolder{Session: "a", Token: 2, TTL: time.Hour, Expires: now.Add(-time.Second)}
	tab.track(live)
	tab.track(dead)
	tab.touch("a")
	if got := tab.expires(live); got.Sub(now) < 59*time.Minute {
		t.Fatalf("live lease expires %s after now, want renewed for its hour-long TTL", got.Sub(now))
	}
	if got := tab.expires(dead); !got.Equal(dead.Expires) {
		t.Fatalf("expired lease revived until %s", got)
	}
	tab.forget(1)
	tab.touch("a")
	if got := tab.expires(live); !got.Equal(live.Expires) {
		t.Fatalf("a forgotten lease still renewed: %s", got)
	}
}
