package broker

import (
	"testing"
	"time"
)

// A closed connection is remembered for at least closedMemory and is
// forgotten within twice that; the set holds no more than two
// generations however many connections close.
func TestClosedConnsRemembersForAMinute(t *testing.T) {
	t.Parallel()
	var c closedConns
	t0 := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	if c.has(1) {
		t.Fatal("an empty set has connection 1")
	}
	c.add(1, t0)
	for i := uint64(2); i < 20000; i++ {
		c.add(i, t0.Add(time.Duration(i)*time.Millisecond)) // 20 s of closes
	}
	if !c.has(1) || !c.has(19999) || c.has(20000) {
		t.Fatal("within a minute: the closed connections are not all remembered, or one too many is")
	}
	c.add(20000, t0.Add(closedMemory)) // a new generation begins
	if !c.has(1) || !c.has(20000) {
		t.Fatal("a minute on: the older generation is forgotten too soon")
	}
	c.add(20001, t0.Add(2*closedMemory)) // and another: the first is dropped
	if c.has(1) || c.has(19999) {
		t.Fatal("two minutes on: connections closed in the first minute are still remembered")
	}
	if !c.has(20000) || !c.has(20001) {
		t.Fatal("two minutes on: the last minute's closes are forgotten")
	}
	if n := len(c.cur) + len(c.prev); n != 2 {
		t.Fatalf("the set holds %d ids, want 2", n)
	}
}
