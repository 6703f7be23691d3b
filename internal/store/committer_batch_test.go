package store

import (
	"fmt"
	"sync"
	"testing"
)

// TestCommitterSplitsBatchesByBytes: ops queued behind a running batch
// that together exceed maxBatchBytes are committed in more than one
// batch (the op that does not fit is carried to the next), each once and
// in order.
func TestCommitterSplitsBatchesByBytes(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	c := NewCommitter(s, CommitterOptions{})
	defer c.Close()
	release := make(chan struct{})
	started := make(chan struct{})
	var once sync.Once
	// The first op holds the loop in its batch while the big ones queue.
	c.Submit(Op{Apply: func(txn *Txn) error {
		once.Do(func() { close(started) })
		<-release
		return txn.Set("k/first", []byte("v"))
	}, After: func(error) {}})
	<-started
	var mu sync.Mutex
	var order []int
	batches := map[*Txn]bool{}
	var wg sync.WaitGroup
	const n = 3
	wg.Add(n)
	for i := range n {
		c.Submit(Op{
			Apply: func(txn *Txn) error {
				mu.Lock()
				batches[txn] = true
				mu.Unlock()
				return txn.Set(fmt.Sprintf("k/%d", i), []byte("v"))
			},
			After: func(err error) {
				if err != nil {
					t.Errorf("op %d: %v", i, err)
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				wg.Done()
			},
			Size: maxBatchBytes/2 + 1, // two never share a batch
		})
	}
	close(release)
	wg.Wait()
	if fmt.Sprint(order) != "[0 1 2]" {
		t.Fatalf("answered in order %v, want [0 1 2]", order)
	}
	if len(batches) < n {
		t.Fatalf("%d ops over half the batch limit each ran in %d transactions, want one each", n, len(batches))
	}
	count := 0
	_ = s.View(func(txn *Txn) error { txn.Keys("k/", func(string) bool { count++; return true }); return nil })
	if count != n+1 {
		t.Fatalf("%d keys stored, want %d", count, n+1)
	}
}
