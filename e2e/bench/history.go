package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/history"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// The history's rows (issue 34): search over many stored messages (MCP
// Agent Mail publishes a search p95 of about 0.8 ms over 15,000 messages),
// the same search through the CLI (process start, connect, catch-up check,
// query), and the history's cost on the send path: the fan-in scenario with
// history kept and with it switched off (historyMaxAgeMs 0), in alternating
// rounds so that drift of the shared machine hits both.

func init() {
	scenarios = append(scenarios, scenario{"search", benchSearch}, scenario{"history-cost", benchHistoryCost})
}

func rowSearch(n int, words int) string {
	return fmt.Sprintf("search: %s stored messages, %d-word query (best 20)", thousands(n), words)
}
func rowSearchP95(n int, words int) string { return rowSearch(n, words) + ", p95" }
func rowIndexRate(n int) string {
	return fmt.Sprintf("search: indexing %s messages (catch-up)", thousands(n))
}

const (
	rowSearchCLI      = "search: intercom search via the CLI (exec → exit, small history)"
	rowSearchCLIFloor = "search: floor, small Go program exec → exit"

	rowSearchInProc      = "search: the CLI's work in process (connect, open, catch-up check, query, close)"
	rowSearchCLICPU      = "search: intercom search via the CLI, CPU per run"
	rowSearchCLIFloorCPU = "search: floor program, CPU per run"
)

// searchSizes are how many messages the search scenario stores, in turn,
// in one index.
func searchSizes(cfg config) []int {
	switch cfg.Mode {
	case "full":
		return []int{15000, 100000}
	case "quick":
		return []int{15000}
	}
	return []int{2000}
}

// benchSearch indexes generated messages (20 words each from a vocabulary
// of 5,000) through the index's own catch-up, then times searches for
// random words and pairs of words at each size; then the CLI.
func benchSearch(ctx context.Context, h *procOwner, cfg config, r *Results) error {
	home := filepath.Join(h.root, "search")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	ix, err := history.Open(home)
	if err != nil {
		return err
	}
	defer ix.Close()
	queries := 2000
	if cfg.Mode == "test" {
		queries = 50
	}
	indexed := 0
	for _, n := range searchSizes(cfg) {
		src := newGenerated(n)
		t0 := time.Now()
		if _, err := ix.Sync(ctx, src); err != nil {
			return err
		}
		r.val(rowIndexRate(n), unitMsgPerSec, float64(n-indexed)/time.Since(t0).Seconds())
		indexed = n
		rng := rand.New(rand.NewPCG(2, 3))
		for _, words := range []int{1, 2} {
			samples := make([]time.Duration, 0, queries)
			runtime.GC()         // the catch-up's garbage is not the queries'
			cpu0, _ := selfCPU() // a failed reading shows as 0
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
			cpu1, _ := selfCPU()
			cpu := cpu1 - cpu0
			r.lat(rowSearch(n, words), "ms", samples)
			r.val(rowSearchP95(n, words), "ms", float64(percentile(samples, 95))/float64(time.Millisecond))
			r.val(rowSearch(n, words)+", CPU per query", "ms CPU", float64(cpu)/float64(time.Millisecond)/float64(queries))
		}
		if row, ok := r.get(rowSearchP95(n, 1)); ok && n == 15000 {
			r.Targets = append(r.Targets, Target{Name: "search p95, 15,000 messages, 1 word", Goal: "≤ 0.8 ms (Agent Mail: p95 ≈ 0.8 ms over 15,000)", Measured: *row.Value, Unit: "ms", OK: *row.Value <= 0.8})
		}
	}
	return benchSearchCLI(ctx, h, cfg, r)
}

// benchSearchCLI times `intercom search` against a real broker holding a
// small history, alternating with the floor program: what a person pays
// on top of the query (process start, connect, the catch-up check).
func benchSearchCLI(ctx context.Context, h *procOwner, cfg config, r *Results) error {
	cli, err := resolveCLI(ctx, cfg.CLI, h.root)
	if err != nil {
		return err
	}
	floor, err := buildFloor(ctx, h.root)
	if err != nil {
		return err
	}
	b, err := h.startBroker(ctx, "search-cli")
	if err != nil {
		return err
	}
	defer b.Stop()
	if err := fillHistory(ctx, b, 200); err != nil {
		return err
	}
	env := append(os.Environ(), "INTERCOM_HOME="+b.layout.Home, "INTERCOM_SOCKET="+b.layout.Socket, "INTERCOM_SESSION=")
	var cpu [2]time.Duration // the CLI's and the floor's, user + system
	run := func(k int, name string, args ...string) (time.Duration, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = env
		var errb bytes.Buffer
		cmd.Stderr = &errb
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("%s: %w: %s", filepath.Base(name), err, strings.TrimSpace(errb.String()))
		}
		d := time.Since(t0)
		cpu[k] += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return d, nil
	}
	if _, err := run(0, cli, "search", "word7", "--json"); err != nil { // the first one builds the index
		return err
	}
	cpu[0] = 0
	n := cfg.HookN
	walls, floors := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	for i := range n {
		d, err := run(0, cli, "search", fmt.Sprintf("word%d", i%10), "--json")
		if err != nil {
			return err
		}
		walls = append(walls, d)
		if d, err = run(1, floor); err != nil {
			return err
		}
		floors = append(floors, d)
	}
	// The CLI's work without its process start: connect, open the index,
	// the catch-up check, the query, close.
	inproc := make([]time.Duration, 0, n)
	for i := range n {
		t0 := time.Now()
		c, err := b.Connect(ctx, "intercom-cli")
		if err != nil {
			return err
		}
		ix, err := history.Open(b.layout.Home)
		if err == nil {
			if _, err = ix.Sync(ctx, c); err == nil {
				_, err = ix.Search(ctx, fmt.Sprintf("word%d", i%10), history.Filter{Limit: 20})
			}
			ix.Close()
		}
		c.Close()
		if err != nil {
			return err
		}
		inproc = append(inproc, time.Since(t0))
	}
	r.lat(rowSearchCLI, "ms", walls)
	r.lat(rowSearchCLIFloor, "ms", floors)
	r.lat(rowSearchInProc, "ms", inproc)
	r.val(rowSearchCLICPU, "ms CPU", float64(cpu[0])/float64(time.Millisecond)/float64(n))
	r.val(rowSearchCLIFloorCPU, "ms CPU", float64(cpu[1])/float64(time.Millisecond)/float64(n))
	return nil
}

// fillHistory delivers and acknowledges n messages, so that the broker
// keeps them in its history.
func fillHistory(ctx context.Context, b *broker, n int) error {
	c, err := b.Connect(ctx, "fill")
	if err != nil {
		return err
	}
	defer c.Close()
	to, err := c.Attach(ctx, intercom.AttachOptions{Name: "reader"})
	if err != nil {
		return err
	}
	from, err := c.Attach(ctx, intercom.AttachOptions{Name: "writer", NoDeliver: true})
	if err != nil {
		return err
	}
	for i := range n {
		if _, err := c.Send(ctx, wire.SendRequest{From: from.ID(), To: to.ID(), Text: fmt.Sprintf("message %d about word%d and word%d", i, i%10, (i+3)%10)}); err != nil {
			return err
		}
		select {
		case m := <-to.Messages():
			if err := to.Ack(ctx, m.ID); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Rows of the history's cost on the send path.
const (
	rowHistOn        = "history cost: fan-in with history, median of rounds"
	rowHistOff       = "history cost: fan-in without history, median of rounds"
	rowHistCPUOn     = "history cost: broker CPU per message with history, median"
	rowHistCPUOff    = "history cost: broker CPU per message without history, median"
	rowHistCPURatio  = "history cost: CPU per message with ÷ without, median of paired rounds"
	rowHistCPULow    = "history cost: CPU with ÷ without, lowest paired round"
	rowHistCPUHigh   = "history cost: CPU with ÷ without, highest paired round"
	rowHistRateRatio = "history cost: fan-in rate with ÷ without, median of paired rounds"
)

// historyRounds is how many pairs of fan-in runs the history-cost scenario
// alternates.
func historyRounds(cfg config) int {
	switch cfg.Mode {
	case "full":
		return 6
	case "quick":
		return 3
	}
	return 1
}

// benchHistoryCost alternates the fan-in with history kept (the default
// configuration) and without (historyMaxAgeMs 0), each round on fresh
// homes, and reports medians and the spread of the paired ratios.
func benchHistoryCost(ctx context.Context, h *procOwner, cfg config, r *Results) error {
	n := historyRounds(cfg)
	cfg.Prose = true // the history's chunks are compressed: measure it on words
	var rateOn, rateOff, cpuOn, cpuOff, cpuRatio, rateRatio []float64
	for i := range n {
		var rate, cpu [2]float64
		for _, hist := range []bool{i%2 == 0, i%2 != 0} { // who goes first alternates too
			name := fmt.Sprintf("history-cost-%d-%t", i, hist)
			if hist {
				brokerConfigs[name] = `{"idleExitMs":0}`
			} else {
				brokerConfigs[name] = `{"idleExitMs":0,"historyMaxAgeMs":0}`
			}
			ra, c, err := flood(ctx, h, cfg, name, cfg.FaninSenders, cfg.FaninPer, cfg.FaninDepth)
			if err != nil {
				return err
			}
			_ = os.RemoveAll(filepath.Join(h.root, name)) // the disk is shared
			if hist {
				rate[0], cpu[0] = ra, c
			} else {
				rate[1], cpu[1] = ra, c
			}
		}
		rateOn, rateOff = append(rateOn, rate[0]), append(rateOff, rate[1])
		cpuOn, cpuOff = append(cpuOn, cpu[0]), append(cpuOff, cpu[1])
		cpuRatio, rateRatio = append(cpuRatio, cpu[0]/cpu[1]), append(rateRatio, rate[0]/rate[1])
	}
	r.val(rowHistOn, unitMsgPerSec, medianOf(rateOn))
	r.val(rowHistOff, unitMsgPerSec, medianOf(rateOff))
	r.val(rowHistCPUOn, "us CPU", medianOf(cpuOn))
	r.val(rowHistCPUOff, "us CPU", medianOf(cpuOff))
	r.val(rowHistCPURatio, "×", medianOf(cpuRatio))
	r.val(rowHistRateRatio, "×", medianOf(rateRatio))
	sort.Float64s(cpuRatio)
	r.val(rowHistCPULow, "×", cpuRatio[0])
	r.val(rowHistCPUHigh, "×", cpuRatio[len(cpuRatio)-1])
	return nil
}

// medianOf is the median of vs (sorted in place).
func medianOf(vs []float64) float64 {
	sort.Float64s(vs)
	m := len(vs) / 2
	if len(vs)%2 == 0 {
		return (vs[m-1] + vs[m]) / 2
	}
	return vs[m]
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
