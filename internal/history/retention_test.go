package history_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/brokertest"
	"github.com/intercom-dev/intercom/pkg/intercom"
)

func pair(t *testing.T, c *intercom.Client) (*intercom.Session, *intercom.Session) {
	t.Helper()
	a, err := c.Attach(context.Background(), intercom.AttachOptions{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Attach(context.Background(), intercom.AttachOptions{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

func TestHistoryOffKeepsNothing(t *testing.T) {
	home := brokertest.StartConfigured(t, `{"historyMaxAgeMs": 0}`)
	c := brokertest.Connect(t, home)
	a, b := pair(t, c)
	deliver(t, c, a, b, "not to be kept")
	// With history off nothing is ever staged: there is no write to await.
	page, err := c.HistoryPage(context.Background(), "", 0)
	if err != nil || len(page.Entries) != 0 {
		t.Fatalf("history with historyMaxAgeMs 0: %+v, %v", page, err)
	}
}

func TestHistoryIsTrimmedToItsSizeCap(t *testing.T) {
	home := brokertest.StartConfigured(t, `{"historyMaxBytes": 8192}`)
	c := brokertest.Connect(t, home)
	a, b := pair(t, c)
	const n = 40
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		// Random letters: the history packs its chunks, and the cap is on
		// what they take on disk.
		noise := make([]byte, 600)
		for j := range noise {
			noise[j] = byte('a' + rng.IntN(26))
		}
		deliver(t, c, a, b, fmt.Sprintf("message %02d %s", i, noise))
	}
	last := fmt.Sprintf("message %02d ", n-1)
	await := func(cond func() bool, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatal(what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	await(func() bool {
		page, err := c.HistoryPage(context.Background(), "", 0)
		if err != nil || len(page.Entries) == 0 {
			return false
		}
		newest := page.Entries[len(page.Entries)-1].Message
		return len(page.Entries) < n/2 && newest != nil && strings.HasPrefix(newest.Text, last) && page.First == page.Entries[0].Cursor
	}, "history not trimmed to its cap with the newest message kept")
}
