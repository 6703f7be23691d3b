package broker

import "time"

// closedMemory is how long the broker remembers at least that a connection
// closed (a register racing its own connection's close: sessions.go,
// register.go).
const closedMemory = time.Minute

// closedConns is the set of connections that closed lately: each is
// remembered for at least closedMemory and at most twice that. It holds two
// generations of ids and drops the older whole once the newer is
// closedMemory old, so a close costs the same however many came before (a
// storm of hooks is a storm of connections: sweeping one map of every id
// closed in the last minute at each close made a close cost O(closes per
// minute)). Not safe for concurrent use (sessionTable.mu guards it).
type closedConns struct {
	cur, prev map[uint64]struct{}
	since     time.Time // when cur began
}

// add remembers that connection cid closed at now.
func (c *closedConns) add(cid uint64, now time.Time) {
	if c.cur == nil || now.Sub(c.since) >= closedMemory {
		c.prev, c.cur, c.since = c.cur, map[uint64]struct{}{}, now
	}
	c.cur[cid] = struct{}{}
}

// has reports whether connection cid closed lately.
func (c *closedConns) has(cid uint64) bool {
	_, inCur := c.cur[cid]
	_, inPrev := c.prev[cid]
	return inCur || inPrev
}
