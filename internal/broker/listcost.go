package broker

import (
	"sync"
	"time"
)

// The cost of a bridged host's topic listings. A listing reads every
// current record and subscription of the exported topics, so its cost grows
// with the store, not with the request: a host listing within its message
// rate could keep a core busy. Each host has a budget of items read (records
// and subscriptions), refilled at listItemsPerSec up to listItemsBurst; a
// listing is refused with quota_exceeded while the host is over it, and
// charged its cost after it ran.
const (
	listItemsPerSec = 20000
	listItemsBurst  = 100000
)

// listBudget holds each host's debt of items read; a leaf lock.
type listBudget struct {
	mu    sync.Mutex
	hosts map[string]*listDebt
	clock func() time.Time // time.Now; a test's own
}

func (l *listBudget) nowLocked() time.Time {
	if l.clock != nil {
		return l.clock()
	}
	return time.Now()
}

type listDebt struct {
	items float64 // read beyond what has refilled since at
	at    time.Time
}

// debtLocked is host's debt now, refilled since it was last charged.
func (l *listBudget) debtLocked(host string, now time.Time) *listDebt {
	if l.hosts == nil {
		l.hosts = map[string]*listDebt{}
	}
	d := l.hosts[host]
	if d == nil {
		d = &listDebt{at: now}
		l.hosts[host] = d
	}
	d.items = max(0, d.items-now.Sub(d.at).Seconds()*listItemsPerSec)
	d.at = now
	return d
}

// allow reports whether host may list now.
func (l *listBudget) allow(host string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.debtLocked(host, l.nowLocked()).items < listItemsBurst
}

// charge adds a listing's items to host's debt.
func (l *listBudget) charge(host string, items int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.debtLocked(host, l.nowLocked()).items += float64(items)
}
