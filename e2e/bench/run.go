package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// config is the size of one run.
type config struct {
	Mode       string `json:"mode"`
	Broker     string `json:"-"`
	Out        string `json:"-"`
	ProfileDir string `json:"-"`

	TextBytes int `json:"text_bytes"` // message text size
	// Prose: message texts of words (proseText) instead of padding
	// (history-cost: the history's chunks are compressed, and padding
	// compresses ten times better than what people and agents write).
	Prose          bool           `json:"prose,omitempty"`
	FloorN         int            `json:"floor_n"`            // serial echo and request/reply round trips
	FsyncN         int            `json:"fsync_n"`            // serial fsync'd Badger writes
	LatencyN       int            `json:"latency_n"`          // serial sends A→B
	PipelineN      int            `json:"pipeline_n"`         // messages of the single pipelined sender
	PipelineDepth  int            `json:"pipeline_depth"`     // its sends in flight
	FaninSenders   int            `json:"fanin_senders"`      // concurrent senders
	FaninPer       int            `json:"fanin_per_sender"`   // messages per sender, pipelined
	FaninDepth     int            `json:"fanin_depth"`        // sends in flight per sender
	SerialFaninPer int            `json:"serial_fanin_per"`   // messages per sender, one at a time
	AskN           int            `json:"ask_n"`              // serial asks
	Presence       []presenceCase `json:"presence"`           // session counts
	ColdN          int            `json:"cold_n"`             // cold starts per variant
	IdleSessions   int            `json:"idle_sessions"`      // attached during the idle measurement
	IdleFor        time.Duration  `json:"idle_for_ns"`        // idle measurement window
	BridgeLatencyN int            `json:"bridge_latency_n"`   // serial sends across the hub
	BridgeFaninPer int            `json:"bridge_fanin_per"`   // messages per sending host, 4 hosts → 1
	BridgeDepth    int            `json:"bridge_fanin_depth"` // their sends in flight per host
	HookN          int            `json:"hook_n"`             // serial hooks (and floor runs) timed
	StormAgents    int            `json:"storm_agents"`       // agents in the hook storm
	StormEvery     time.Duration  `json:"storm_every_ns"`     // each agent's hook period
	StormFor       time.Duration  `json:"storm_for_ns"`       // storm length
	StormMsgsPer   int            `json:"storm_msgs_per"`     // messages sent to each agent during it
	CLI            string         `json:"-"`                  // intercom binary ("" builds it)
	Only           []string       `json:"only,omitempty"`     // run only these scenarios
	Keep           bool           `json:"-"`                  // keep the temporary directory
	StepTimeout    time.Duration  `json:"step_timeout_ns"`    // bound on any one wait
	ScenarioLimit  time.Duration  `json:"scenario_limit_ns"`  // bound on one scenario
}

type presenceCase struct {
	Sessions  int  `json:"sessions"`
	Lists     int  `json:"lists"`
	LongNames bool `json:"long_names,omitempty"` // names of ≥ 8 characters
}

func fullConfig() config {
	return config{
		Mode: "full", TextBytes: 128,
		FloorN: 10000, FsyncN: 1000,
		LatencyN:  10000,
		PipelineN: 20000, PipelineDepth: 256,
		FaninSenders: 50, FaninPer: 400, FaninDepth: 16, SerialFaninPer: 100,
		AskN: 2000,
		Presence: []presenceCase{
			{Sessions: 1000, Lists: 200},
			{Sessions: 10000, Lists: 50},
			{Sessions: 300, Lists: 20, LongNames: true},
		},
		ColdN: 10, IdleSessions: 100, IdleFor: 10 * time.Second,
		BridgeLatencyN: 1000, BridgeFaninPer: 2000, BridgeDepth: 200,
		HookN: 200, StormAgents: 30, StormEvery: 250 * time.Millisecond, StormFor: 30 * time.Second, StormMsgsPer: 20,
		StepTimeout: 60 * time.Second, ScenarioLimit: 10 * time.Minute,
	}
}

func quickConfig() config {
	c := fullConfig()
	c.Mode = "quick"
	c.FloorN, c.FsyncN = 2000, 200
	c.LatencyN = 1000
	c.PipelineN = 5000
	c.FaninPer, c.SerialFaninPer = 100, 10
	c.AskN = 200
	c.Presence = []presenceCase{{Sessions: 1000, Lists: 100}}
	c.ColdN = 5
	c.IdleFor = 3 * time.Second
	c.BridgeLatencyN, c.BridgeFaninPer = 200, 1000
	c.HookN, c.StormFor, c.StormMsgsPer = 50, 10*time.Second, 5
	c.ScenarioLimit = 2 * time.Minute
	return c
}

// testConfig is the smallest run that still exercises every scenario; the
// package test uses it (under the race detector).
func testConfig() config {
	c := quickConfig()
	c.Mode = "test"
	c.FloorN, c.FsyncN = 300, 30
	c.LatencyN = 100
	c.PipelineN, c.PipelineDepth = 400, 32
	c.FaninPer, c.FaninDepth, c.SerialFaninPer = 8, 4, 2
	c.AskN = 20
	c.Presence = []presenceCase{{Sessions: 100, Lists: 20}}
	c.ColdN = 1
	c.IdleFor = 500 * time.Millisecond
	c.BridgeLatencyN, c.BridgeFaninPer, c.BridgeDepth = 10, 10, 4
	c.HookN, c.StormAgents, c.StormFor, c.StormMsgsPer = 5, 3, time.Second, 2
	return c
}

// Row is one line of results: a latency distribution (P50, P99) or a single
// value.
type Row struct {
	Name  string   `json:"name"`
	Unit  string   `json:"unit"`
	P50   *float64 `json:"p50,omitempty"`
	P99   *float64 `json:"p99,omitempty"`
	Value *float64 `json:"value,omitempty"`
}

// Target is one goal from the issue, checked against this run.
type Target struct {
	Name     string  `json:"name"`
	Goal     string  `json:"goal"`
	Measured float64 `json:"measured"`
	Unit     string  `json:"unit"`
	OK       bool    `json:"ok"`
}

// Results is the JSON document written to BENCH_OUT.
type Results struct {
	Mode    string             `json:"mode"`
	Started time.Time          `json:"started"`
	Seconds float64            `json:"seconds"`
	Host    map[string]any     `json:"host"`
	Config  config             `json:"config"`
	Rows    []Row              `json:"rows"`
	Ratios  map[string]float64 `json:"ratios"`
	Targets []Target           `json:"targets"`
	Errors  []string           `json:"errors,omitempty"`

	byName map[string]Row
}

func (r *Results) add(row Row) {
	r.Rows = append(r.Rows, row)
	r.byName[row.Name] = row
}

// lat adds a latency row in unit ("us" or "ms").
func (r *Results) lat(name, unit string, samples []time.Duration) {
	p50, p99 := percentile(samples, 50), percentile(samples, 99)
	div := float64(time.Microsecond)
	if unit == "ms" {
		div = float64(time.Millisecond)
	}
	a, b := round3(float64(p50)/div), round3(float64(p99)/div)
	r.add(Row{Name: name, Unit: unit, P50: &a, P99: &b})
}

func (r *Results) val(name, unit string, v float64) {
	v = round3(v)
	r.add(Row{Name: name, Unit: unit, Value: &v})
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// percentile is the nearest-rank percentile of samples (sorted in place).
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	k := int(math.Ceil(p/100*float64(len(d)))) - 1
	return d[max(0, min(k, len(d)-1))]
}

func median(d []time.Duration) time.Duration { return percentile(d, 50) }

// Row names. Ratios and targets look rows up by these.
const (
	rowEcho      = "floor: Unix-socket echo round trip"
	rowReqReply  = "floor: gateway NATS request/reply"
	rowPubSub1   = "floor: gateway NATS pub/sub, 1 publisher → 1"
	rowPubSub50  = "floor: gateway NATS pub/sub, 50 publishers → 1"
	rowFsync     = "floor: fsync'd Badger write"
	rowAccepted  = "latency: send→accepted"
	rowDelivered = "latency: send→delivered to holder"
	rowPipelined = "throughput: 1 sender pipelined → 1 (delivered+acked)"
	rowFanin     = "fan-in: 50 senders → 1 (delivered+acked)"
	rowFaninSer  = "fan-in: 50 serial senders → 1 (delivered+acked)"
	rowAsk       = "ask→reply round trip"
	// Broker CPU (user+system) per message, send and ack: robust to a
	// loaded machine, unlike wall-clock rates.
	rowLatencyCPU   = "latency: broker CPU per message"
	rowPipelinedCPU = "throughput: 1 sender pipelined: broker CPU per message"
	rowFaninCPU     = "fan-in: 50 senders: broker CPU per message"
	rowColdFresh    = "cold start: no broker → registered (new home)"
	rowColdExist    = "cold start: no broker → registered (existing home)"
	rowBrokerUp     = "cold start: broker exec → socket accepting (existing home)"
	rowIdleCPU      = "idle: broker CPU, 100 attached sessions"
	rowIdleRSS      = "idle: broker RSS, 100 attached sessions"
	unitMsgPerSec   = "msg/s"
)

func rowList(n int, long bool) string {
	if long {
		return fmt.Sprintf("presence: list, %s sessions named agent-NNNNN", thousands(n))
	}
	return fmt.Sprintf("presence: list, %s sessions", thousands(n))
}
func rowListRaw(n int) string {
	return fmt.Sprintf("presence: list, %s sessions, request only (no client decoding)", thousands(n))
}
func rowListBytes(n int) string {
	return fmt.Sprintf("presence: list, %s sessions, reply size", thousands(n))
}
func rowRSS(n int, long bool) string {
	if long {
		return fmt.Sprintf("presence: broker RSS, %s sessions named agent-NNNNN", thousands(n))
	}
	return fmt.Sprintf("presence: broker RSS, %s sessions", thousands(n))
}
func rowAttach(n int, long bool) string {
	if long {
		return fmt.Sprintf("presence: attach %s sessions named agent-NNNNN (total)", thousands(n))
	}
	return fmt.Sprintf("presence: attach %s sessions (total)", thousands(n))
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

type scenario struct {
	name string
	fn   func(ctx context.Context, h *procOwner, cfg config, r *Results) error
}

var scenarios = []scenario{
	{"floor", benchFloor},
	{"latency", benchLatency},
	{"ask", benchAsk},
	{"pipelined", benchPipelined},
	{"client", benchClientCPU},
	{"fanin", benchFanin},
	{"fanin-serial", benchFaninSerial},
	{"presence", benchPresence},
	{"coldstart", benchColdStart},
	{"idle", benchIdle},
	{"bridge", benchBridgeLatency},
	{"bridge-fanin", benchBridgeFanin},
	{"hooks", benchHooks},
}

// run executes every scenario, prints the Markdown report to stdout and
// writes the JSON file. A failing scenario is reported and the others still
// run; the error names every failure.
func run(ctx context.Context, h *procOwner, cfg config, stdout, stderr io.Writer) error {
	root, err := os.MkdirTemp("", "intercom-bench-")
	if err != nil {
		return err
	}
	if cfg.Keep {
		fmt.Fprintf(stderr, "bench: keeping %s\n", root)
	} else {
		defer os.RemoveAll(root)
	}
	h.root = root
	defer h.killAll()
	if h.bin, err = resolveBroker(ctx, cfg.Broker, root); err != nil {
		return err
	}
	if cfg.ProfileDir != "" {
		if h.profil, err = filepath.Abs(cfg.ProfileDir); err != nil {
			return err
		}
		if err := os.MkdirAll(h.profil, 0o755); err != nil {
			return err
		}
	}
	res := &Results{
		Mode: cfg.Mode, Started: time.Now().UTC(), Config: cfg, Ratios: map[string]float64{}, byName: map[string]Row{},
		Host: map[string]any{"goos": runtime.GOOS, "goarch": runtime.GOARCH, "cpus": runtime.NumCPU(), "go": runtime.Version(), "broker": h.bin},
	}
	if host, err := os.Hostname(); err == nil {
		res.Host["hostname"] = host
	}
	res.Host["loadavg_start"] = loadavg()
	t0 := time.Now()
	for _, sc := range scenarios {
		if ctx.Err() != nil {
			res.Errors = append(res.Errors, "interrupted")
			break
		}
		if !selected(cfg, sc.name) {
			continue
		}
		fmt.Fprintf(stderr, "bench: %-13s ", sc.name)
		st := time.Now()
		sctx, cancel := context.WithTimeout(ctx, cfg.ScenarioLimit)
		err := sc.fn(sctx, h, cfg, res)
		cancel()
		h.killAll() // a failed scenario may leave its broker behind
		if err != nil {
			res.Errors = append(res.Errors, sc.name+": "+err.Error())
			fmt.Fprintf(stderr, "FAILED after %s: %v\n", time.Since(st).Round(time.Millisecond), err)
			continue
		}
		fmt.Fprintf(stderr, "%s\n", time.Since(st).Round(time.Millisecond))
	}
	res.Seconds = round3(time.Since(t0).Seconds())
	res.Host["loadavg_end"] = loadavg()
	res.computeRatios()
	res.checkTargets(cfg)
	res.markdown(stdout)
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(cfg.Out, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	fmt.Fprintf(stderr, "bench: results written to %s\n", cfg.Out)
	if len(res.Errors) > 0 {
		return fmt.Errorf("%d scenario(s) failed: %s", len(res.Errors), strings.Join(res.Errors, "; "))
	}
	return nil
}

// loadavg is the 1-minute load average: on a shared machine it says how
// much the figures are disturbed.
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(data)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

func selected(cfg config, name string) bool {
	if len(cfg.Only) == 0 {
		return true
	}
	for _, s := range cfg.Only {
		if s == name {
			return true
		}
	}
	return false
}

func (r *Results) get(name string) (Row, bool) {
	row, ok := r.byName[name]
	return row, ok
}

// computeRatios divides intercom figures by their floors.
func (r *Results) computeRatios() {
	rr, okRR := r.get(rowReqReply)
	fs, okFS := r.get(rowFsync)
	if acc, ok := r.get(rowAccepted); ok && okRR && okFS {
		r.Ratios["accepted_p50_vs_floor"] = round3(*acc.P50 / (*rr.P50 + *fs.P50))
		r.Ratios["accepted_p99_vs_floor"] = round3(*acc.P99 / (*rr.P99 + *fs.P99))
	}
	if del, ok := r.get(rowDelivered); ok && okRR {
		r.Ratios["delivered_p50_vs_floor"] = round3(*del.P50 / *rr.P50)
		r.Ratios["delivered_p99_vs_floor"] = round3(*del.P99 / *rr.P99)
	}
	if f, ok := r.get(rowFanin); ok {
		if fl, ok := r.get(rowPubSub50); ok {
			r.Ratios["fanin_vs_floor"] = round3(*f.Value / *fl.Value)
		}
	}
	if f, ok := r.get(rowFaninSer); ok {
		if fl, ok := r.get(rowPubSub50); ok {
			r.Ratios["fanin_serial_vs_floor"] = round3(*f.Value / *fl.Value)
		}
	}
	if p, ok := r.get(rowPipelined); ok {
		if fl, ok := r.get(rowPubSub1); ok {
			r.Ratios["pipelined_vs_floor"] = round3(*p.Value / *fl.Value)
		}
	}
	if c, ok := r.get(rowClientSendCPU); ok {
		if fl, ok := r.get(rowClientFloorCPU); ok && *fl.Value > 0 {
			r.Ratios["client_send_cpu_vs_floor"] = round3(*c.Value / *fl.Value)
		}
	}
	if b, ok := r.get(rowBridgeFanin); ok {
		if f, ok := r.get(rowFanin); ok {
			r.Ratios["bridge_fanin_vs_local_fanin"] = round3(*b.Value / *f.Value)
		}
	}
	if a, ok := r.get(rowAsk); ok && okRR && okFS {
		// An ask is two durable sends (question, reply) plus the asker's
		// durable ack of the reply.
		r.Ratios["ask_p50_vs_floor"] = round3(*a.P50 / (3 * (*rr.P50 + *fs.P50)))
	}
}

// checkTargets evaluates the goals of the issue on this run.
func (r *Results) checkTargets(cfg config) {
	ratio := func(name, key, goal string, limit float64, atMost bool) {
		v, ok := r.Ratios[key]
		if !ok {
			return
		}
		r.Targets = append(r.Targets, Target{Name: name, Goal: goal, Measured: v, Unit: "×", OK: (atMost && v <= limit) || (!atMost && v >= limit)})
	}
	pick := func(name, row, field, goal, unit string, limit float64, atMost bool) {
		rw, ok := r.get(row)
		if !ok {
			return
		}
		var v float64
		switch field {
		case "p50":
			v = *rw.P50
		case "p99":
			v = *rw.P99
		default:
			v = *rw.Value
		}
		r.Targets = append(r.Targets, Target{Name: name, Goal: goal, Measured: v, Unit: unit, OK: (atMost && v <= limit) || (!atMost && v >= limit)})
	}
	ratio("send→accepted p50 vs (req/reply + fsync) floor", "accepted_p50_vs_floor", "≤ 1.5×", 1.5, true)
	ratio("send→delivered p50 vs req/reply floor", "delivered_p50_vs_floor", "≤ 1.5×", 1.5, true)
	ratio("50-sender fan-in vs raw NATS pub/sub", "fanin_vs_floor", "≥ 0.25×", 0.25, false)
	pick("50-sender fan-in", rowFanin, "value", "≥ 35,000 msg/s", unitMsgPerSec, 35000, false)
	pick("1 sender pipelined", rowPipelined, "value", "≥ 35,000 msg/s", unitMsgPerSec, 35000, false)
	pick("broker CPU per message (fan-in)", rowFaninCPU, "value", "≤ 40 µs", "µs", 40, true)
	pick("list 1,000 sessions p50", rowList(1000, false), "p50", "≤ 2 ms", "ms", 2, true)
	pick("list 10,000 sessions p50", rowList(10000, false), "p50", "≤ 20 ms", "ms", 20, true)
	pick("broker RSS with 10,000 sessions", rowRSS(10000, false), "value", "≤ 256 MiB", "MiB", 256, true)
	pick("cold start median (new home)", rowColdFresh, "value", "≤ 50 ms", "ms", 50, true)
	pick("cold start median (existing home)", rowColdExist, "value", "≤ 50 ms", "ms", 50, true)
	pick("idle CPU", rowIdleCPU, "value", "≈ 0 (≤ 20 ms per 10 s = 0.2% of a core)", "ms", 20, true)
	// Issue 32 items 3 and 4: the client at half its CPU of before (12.2 and
	// 6.6 µs, measured by this bench on main at 37e27db), and the bridge.
	pick("client CPU per sent message", rowClientSendCPU, "value", "≤ 6.1 µs (half of 12.2)", "µs", 6.1, true)
	pick("client CPU per received message", rowClientRecvCPU, "value", "≤ 3.3 µs (half of 6.6)", "µs", 3.3, true)
	pick("client CPU per message in the 50-sender fan-in", rowFaninClientCPU, "value", "≤ 16 µs (half of ≈ 32)", "µs", 16, true)
	ratio("bridge fan-in vs local 50-sender fan-in", "bridge_fanin_vs_local_fanin", "≥ 0.25×", 0.25, false)
	pick("bridge send→delivered p50", rowBridgeLatency, "p50", "≤ 1 ms", "ms", 1, true)
	// "reference": pi-intercom, a non-durable TypeScript broker measured on this machine.
	pick("reference: send→delivered p50", rowDelivered, "p50", "< 43 µs", "µs", 43, true)
	pick("reference: send→delivered p99", rowDelivered, "p99", "< 239 µs", "µs", 239, true)
	pick("reference: pipelined throughput", rowPipelined, "value", "> 34,000 msg/s", unitMsgPerSec, 34000, false)
	pick("reference: 50-sender fan-in", rowFanin, "value", "> 29,500 msg/s", unitMsgPerSec, 29500, false)
	pick("reference: list 1,000 sessions p50", rowList(1000, false), "p50", "< 4 ms", "ms", 4, true)
	pick("reference: broker RSS, 1,000 sessions", rowRSS(1000, false), "value", "< 57 MiB", "MiB", 57, true)
	pick("reference: cold start", rowColdExist, "value", "< 145 ms", "ms", 145, true)
}

// fmtNum prints v with precision fitting its size.
func fmtNum(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 10000:
		return thousands(int(math.Round(v)))
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func unitLabel(u string) string {
	if rest, ok := strings.CutPrefix(u, "us"); ok {
		return "µs" + rest
	}
	return u
}

// markdown prints the report.
func (r *Results) markdown(w io.Writer) {
	fmt.Fprintf(w, "\n### intercom bench (%s mode, %d CPUs, %s, %s, %.0f s; load average %v → %v)\n\n",
		r.Mode, runtime.NumCPU(), runtime.Version(), r.Started.Format("2006-01-02 15:04 UTC"), r.Seconds, r.Host["loadavg_start"], r.Host["loadavg_end"])
	fmt.Fprintln(w, "| scenario | p50 | p99 | value | unit |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---|")
	for _, row := range r.Rows {
		p50, p99, val := "", "", ""
		if row.P50 != nil {
			p50, p99 = fmtNum(*row.P50), fmtNum(*row.P99)
		}
		if row.Value != nil {
			val = fmtNum(*row.Value)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", row.Name, p50, p99, val, unitLabel(row.Unit))
	}
	if len(r.Ratios) > 0 {
		keys := make([]string, 0, len(r.Ratios))
		for k := range r.Ratios {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintln(w, "\n| ratio (intercom ÷ floor) | value |")
		fmt.Fprintln(w, "|---|---:|")
		for _, k := range keys {
			fmt.Fprintf(w, "| %s | %.2f |\n", k, r.Ratios[k])
		}
	}
	if len(r.Targets) > 0 {
		fmt.Fprintln(w, "\n| target | goal | measured | result |")
		fmt.Fprintln(w, "|---|---|---:|---|")
		for _, t := range r.Targets {
			res := "miss"
			if t.OK {
				res = "hit"
			}
			fmt.Fprintf(w, "| %s | %s | %s %s | %s |\n", t.Name, t.Goal, fmtNum(t.Measured), unitLabel(t.Unit), res)
		}
	}
	if len(r.Errors) > 0 {
		fmt.Fprintln(w, "\nErrors:")
		for _, e := range r.Errors {
			fmt.Fprintf(w, "- %s\n", e)
		}
	}
	fmt.Fprintln(w)
}
