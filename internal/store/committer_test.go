package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestCommitterAppliesInOrderAndAnswersOnce(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	c := NewCommitter(s, CommitterOptions{})
	defer c.Close()
	const n = 200
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range n {
		c.Submit(Op{
			Apply: func(txn *Txn) error { return txn.Set(fmt.Sprintf("k/%03d", i), []byte("v")) },
			After: func(err error) {
				if err != nil {
					t.Errorf("op %d: %v", i, err)
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				wg.Done()
			},
			Size: 10, Linger: i%2 == 0,
		})
	}
	wg.Wait()
	for i, got := range order {
		if got != i {
			t.Fatalf("after %d ran as number %d: want arrival order", got, i)
		}
	}
	count := 0
	_ = s.View(func(txn *Txn) error { txn.Keys("k/", func(string) bool { count++; return true }); return nil })
	if count != n {
		t.Fatalf("%d keys stored, want %d", count, n)
	}
}

func TestCommitterRefusalSparesTheBatch(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	sentinel := errors.New("not yours")
	mapped := errors.New("mapped")
	c := NewCommitter(s, CommitterOptions{Errors: func(err error) error { return fmt.Errorf("%w: %w", mapped, err) }})
	defer c.Close()
	refused := make(chan error, 1)
	c.Submit(Op{Apply: func(*Txn) error { return Refuse(sentinel) }, After: func(err error) { refused <- err }})
	if err := c.Wait(func(txn *Txn) error { return txn.Set("ok", nil) }); err != nil {
		t.Fatalf("op after a refusal: %v", err)
	}
	if err := <-refused; !errors.Is(err, sentinel) || !errors.Is(err, mapped) || !IsRefused(err) {
		t.Fatalf("refused op answered %v; want the mapped refusal", err)
	}
	if IsRefused(sentinel) {
		t.Fatal("a plain error reads as refused")
	}
	// A failing op is retried alone; its neighbours still commit.
	boom := errors.New("boom")
	results := make(chan error, 3)
	for i := range 3 {
		c.Submit(Op{Apply: func(txn *Txn) error {
			if i == 1 {
				return boom
			}
			return txn.Set(fmt.Sprint("n/", i), nil)
		}, After: func(err error) { results <- err }})
	}
	var failed int
	for range 3 {
		if err := <-results; errors.Is(err, boom) {
			failed++
		} else if err != nil {
			t.Fatalf("neighbour failed: %v", err)
		}
	}
	if failed != 1 {
		t.Fatalf("%d ops failed with the error, want 1", failed)
	}
}

func TestCommitterUnavailableStoreAnswersEveryOp(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	c := NewCommitter(s, CommitterOptions{})
	defer c.Close()
	s.Fail(errors.New("disk gone"))
	if err := c.Wait(func(txn *Txn) error { return txn.Set("x", nil) }); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("write into a failed store: %v, want ErrUnavailable", err)
	}
	c.Fail(s.Err())
	c.Close()
	c.Submit(Op{Apply: func(*Txn) error { return nil }, After: func(error) { t.Error("an op submitted after Close was answered") }})
}
