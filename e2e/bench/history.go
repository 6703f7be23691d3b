package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/history"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// The history's rows (issue 34): search over many stored messages (MCP
// Agent Mail publishes a search p95 of about 0.8 ms over 15,000 messages),
// and the history's cost on the send path: the fan-in scenario again with
// history switched off (historyMaxAgeMs 0), to compare with the fan-in row.

func init() {
	scenarios = append(scenarios, scenario{"search", benchSearch}, scenario{"fanin-nohistory", benchFaninNoHistory})
	brokerConfigs["fanin-nohistory"] = `{"idleExitMs":0,"historyMaxAgeMs":0}`
}

const (
	rowFaninNoHist    = "fan-in: 50 senders → 1, history off (delivered+acked)"
	rowFaninNoHistCPU = "fan-in: 50 senders, history off: broker CPU per message"
)

func rowSearch(n int, words int) string {
	return fmt.Sprintf("search: %s stored messages, %d-word query (best 20)", thousands(n), words)
}
func rowIndexRate(n int) string {
	return fmt.Sprintf("search: indexing %s messages (catch-up)", thousands(n))
}

func benchFaninNoHistory(ctx context.Context, h *procOwner, cfg config, r *Results) error {
	rate, cpu, err := flood(ctx, h, cfg, "fanin-nohistory", cfg.FaninSenders, cfg.FaninPer, cfg.FaninDepth)
	if err != nil {
		return err
	}
	r.val(rowFaninNoHist, unitMsgPerSec, rate)
	r.val(rowFaninNoHistCPU, "us CPU", cpu)
	return nil
}

// searchSize is how many messages the search scenario stores.
func searchSize(cfg config) int {
	switch cfg.Mode {
	case "full":
		return 100000
	case "quick":
		return 20000
	}
	return 2000
}

// benchSearch indexes generated messages (20 words each from a vocabulary
// of 5,000) through the index's own catch-up, then times searches for
// random words and pairs of words.
func benchSearch(ctx context.Context, h *procOwner, cfg config, r *Results) error {
	home := filepath.Join(h.root, "search")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	n := searchSize(cfg)
	src := newGenerated(n)
	ix, err := history.Open(home)
	if err != nil {
		return err
	}
	defer ix.Close()
	t0 := time.Now()
	if _, err := ix.Sync(ctx, src); err != nil {
		return err
	}
	r.val(rowIndexRate(n), unitMsgPerSec, float64(n)/time.Since(t0).Seconds())
	rng := rand.New(rand.NewPCG(2, 3))
	queries := 2000
	if cfg.Mode == "test" {
		queries = 50
	}
	for _, words := range []int{1, 2} {
		samples := make([]time.Duration, 0, queries)
		for range queries {
			q := make([]string, words)
			for i := range q {
				q[i] = src.vocab[rng.IntN(len(src.vocab))]
			}
			st := time.Now()
			if _, err := ix.Search(ctx, strings.Join(q, " "), history.Filter{Limit: 20}); err != nil {
				return err
			}
			samples = append(samples, time.Since(st))
		}
		r.lat(rowSearch(n, words), "ms", samples)
	}
	if row, ok := r.get(rowSearch(n, 1)); ok && n >= 15000 {
		r.Targets = append(r.Targets, Target{Name: "search p99, " + thousands(n) + " messages", Goal: "≤ 0.8 ms (Agent Mail: p95 ≈ 0.8 ms over 15,000)", Measured: *row.P99, Unit: "ms", OK: *row.P99 <= 0.8})
	}
	return nil
}

// generated is a history of n messages made up on the fly (a
// history.Source): the index is what is measured, not the broker.
type generated struct {
	n     int
	vocab []string
	rng   *rand.Rand
}

func newGenerated(n int) *generated {
	g := &generated{n: n, rng: rand.New(rand.NewPCG(1, 2))}
	const letters = "abcdefghijklmnopqrstuvwxyz"
	for range 5000 {
		w := make([]byte, 4+g.rng.IntN(6))
		for i := range w {
			w[i] = letters[g.rng.IntN(len(letters))]
		}
		g.vocab = append(g.vocab, string(w))
	}
	return g
}

func (g *generated) List(context.Context, intercom.ListOptions) ([]wire.Session, error) {
	return nil, nil
}

func (g *generated) HistoryPage(_ context.Context, after string, limit int) (wire.HistoryReply, error) {
	if limit <= 0 {
		limit = wire.MaxHistoryPage
	}
	start, _ := strconv.Atoi(strings.TrimLeft(after, "0")) // "" and "000…0" are 0
	out := wire.HistoryReply{Epoch: "0", First: fmt.Sprintf("%020d", 1)}
	base := time.Now().Add(-24 * time.Hour)
	for i := start + 1; i <= min(start+limit, g.n); i++ {
		words := make([]string, 20)
		for k := range words {
			words[k] = g.vocab[g.rng.IntN(len(g.vocab))]
		}
		at := base.Add(time.Duration(i) * time.Millisecond)
		from, to := fmt.Sprintf("agent-%02d", i%50), fmt.Sprintf("agent-%02d", (i+7)%50)
		out.Entries = append(out.Entries, wire.HistoryEntry{Cursor: fmt.Sprintf("%020d", i), Kind: wire.HistoryMessage, At: at,
			Message: &wire.Message{ID: fmt.Sprintf("m%019d", i), Seq: uint64(i), From: wire.Peer{ID: from, Name: from}, To: to, Text: strings.Join(words, " "), Delivery: wire.DeliverySteer, SentAt: at}})
	}
	out.More = start+limit < g.n
	return out, nil
}
