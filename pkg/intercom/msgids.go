package intercom

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"sync/atomic"
)

// msgIDs makes a client's client message ids (the broker's idempotency key
// per sender): 128 bits like randomID, of which the first 64 are drawn once
// per client and the last 64 count on from a random start, so a pipelined
// sender pays no draw from the system's random source per message.
type msgIDs struct {
	once   sync.Once
	prefix [8]byte
	n      atomic.Uint64
}

func (g *msgIDs) next() string {
	g.once.Do(func() {
		var seed [16]byte
		_, _ = rand.Read(seed[:])
		copy(g.prefix[:], seed[:8])
		g.n.Store(binary.BigEndian.Uint64(seed[8:]))
	})
	var b [16]byte
	copy(b[:8], g.prefix[:])
	binary.BigEndian.PutUint64(b[8:], g.n.Add(1))
	return hex.EncodeToString(b[:])
}
