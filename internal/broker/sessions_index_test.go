package broker

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// TestTargetIndexAgreesWithResolve: find (the index) answers every target
// exactly as lookup (presence.Resolve over every row) does — the row, or the
// same error — across names shared, names that are id prefixes, short and
// long prefixes, case, spaces, self, and connected and disconnected
// sessions, and again after sessions are added, renamed and forgotten.
func TestTargetIndexAgreesWithResolve(t *testing.T) {
	tk := newTasks()
	defer tk.stop()
	tab := newSessionTable(newAskTable(tk, func(string, any) {}, 0), newDelivery(nil, nil, tk, newWaiterTable(), newTraceTable(), func(string, any) {}, DefaultWakeLimits))
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"sink", "Sink", "ab12", "worker", "w", "abcdef12", "dup", "dup", "a1b2c3d4e5"}
	add := func(id, name string, connected bool) {
		tab.mu.Lock()
		tab.byID[id] = &session{Session: wire.Session{ID: id, Name: name, Connected: connected}}
		tab.targets, tab.index = nil, nil
		tab.mu.Unlock()
	}
	for i, n := range names {
		add(fmt.Sprintf("ab%02x%06x", i, rng.Uint32()&0xffffff), n, i%2 == 0)
	}
	add("a1b2c3d4e5f6", "lonely", false)
	add("cafe0123abcd", "x", true)
	add("beef0123abcd", "cafe01", true) // a unique name that is another's id prefix
	add("dead0123abcd", "ca", false)    // … and a short one
	var ids []string
	for id := range tab.byID {
		ids = append(ids, id)
	}
	check := func(round string) {
		t.Helper()
		targets := []string{"", " sink", "sink", "SINK", "worker", "w", "dup", "lonely", "nobody", "ab", "ab1", "ab12", "a1b2", "a1b2c3d4e5", "abcdef12", "cafe01", "CAFE01", "ca", "x"}
		for _, id := range ids {
			targets = append(targets, id, id[:4], id[:6])
		}
		selves := append([]string{""}, ids[:3]...)
		for _, self := range selves {
			for _, tg := range targets {
				got, gerr := tab.find(tg, self)
				want, werr := tab.lookup(tg, self)
				if !reflect.DeepEqual(got, want) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
					t.Fatalf("%s: target %q self %q: index %+v, %v; resolve %+v, %v", round, tg, self, got, gerr, want, werr)
				}
			}
		}
	}
	check("start")
	tab.mu.Lock()
	for _, id := range ids[:3] { // rename, reconnect, forget
		tab.byID[id].Name = "worker"
		tab.byID[id].Connected = !tab.byID[id].Connected
	}
	delete(tab.byID, ids[3])
	tab.targets, tab.index = nil, nil
	tab.mu.Unlock()
	ids = append(ids[:3], ids[4:]...)
	add("ffee00112233", "sink", true)
	check("after changes")
}
