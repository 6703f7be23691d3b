package broker

import (
	"time"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// The bookkeeping of a bridged host's messages. Each message a host stores
// here leaves, besides the message itself, its dedupe and ack keys, kept for
// the retry memory (24 h by default) after the message is read, so that a
// retry is recognised: about 864 bytes that the inbox quotas did not count.
// The ledger counts them per host in keptBuckets time slices of the retry
// memory, and a host whose bookkeeping of the last retry memory would pass
// its --max-inbox-bytes is refused with quota_exceeded.

// bookkeepingBytes is what one stored remote message leaves behind for the
// retry memory (its dedupe and ack keys with the store's overhead, rounded
// up).
const bookkeepingBytes = 1024

const keptBuckets = 24

// keptLog is one host's bookkeeping bytes per time slice; the slices older
// than the retry memory have expired with their keys.
type keptLog struct {
	bytes [keptBuckets]int64
	slot  [keptBuckets]int64 // which slice each bucket counts (its start / slice length)
}

// add counts n bytes kept from now, in slices of every/keptBuckets.
func (k *keptLog) add(now time.Time, every time.Duration, n int64) {
	s := now.UnixNano() / int64(max(every/keptBuckets, 1))
	i := s % keptBuckets
	if k.slot[i] != s {
		k.slot[i], k.bytes[i] = s, 0
	}
	k.bytes[i] += n
}

// total is what is still kept now.
func (k *keptLog) total(now time.Time, every time.Duration) int64 {
	s := now.UnixNano() / int64(max(every/keptBuckets, 1))
	var n int64
	for i := range keptBuckets {
		if s-k.slot[i] < keptBuckets {
			n += k.bytes[i]
		}
	}
	return n
}

// keptLocked checks and counts the bookkeeping of one more message of host.
func (l *ledger) keptLocked(u *hostUsage, host string, lim wire.BridgeLimits) error {
	now := time.Now()
	if kept := u.kept.total(now, l.keepFor); kept+bookkeepingBytes > lim.InboxBytes {
		return quotaError(host, "left %d bytes of delivery records here in the last %s (kept against retries; max %d); retry later", kept, l.keepFor, lim.InboxBytes)
	}
	u.kept.add(now, l.keepFor, bookkeepingBytes)
	return nil
}

// loadKeptLocked counts the remembered send (its scope) of a remote message
// found at start (as kept from now: the store does not say when it
// expires).
func (l *ledger) loadKeptLocked(scope string) {
	if _, host, ok := wire.SplitRemote(scope); ok {
		l.usageLocked(host).kept.add(time.Now(), l.keepFor, bookkeepingBytes)
	}
}
