package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if floorServerMain() { // this test binary doubles as the floor server
		return
	}
	os.Exit(m.Run())
}

// TestBenchHarness runs the bench at its smallest scale to prove that every
// scenario works end to end against the real broker binary and that the JSON
// has the agreed shape. It asserts no timings.
func TestBenchHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real broker; skipped with -short")
	}
	cfg := testConfig()
	cfg.Broker = os.Getenv("INTERCOM_BROKER") // "" builds it
	cfg.Out = filepath.Join(t.TempDir(), "bench.json")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	h := newProcOwner()
	var stdout, stderr bytes.Buffer
	err := run(ctx, h, cfg, &stdout, &stderr)
	h.killAll()
	t.Logf("stderr:\n%s\nstdout:\n%s", stderr.String(), stdout.String())
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	if n := len(h.procs); n != 0 {
		t.Errorf("%d processes left running", n)
	}
	h.mu.Unlock()

	data, err := os.ReadFile(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rows []struct {
			Name  string   `json:"name"`
			Unit  string   `json:"unit"`
			P50   *float64 `json:"p50"`
			P99   *float64 `json:"p99"`
			Value *float64 `json:"value"`
		} `json:"rows"`
		Ratios map[string]float64 `json:"ratios"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("results JSON: %v", err)
	}
	names := map[string]bool{}
	for _, r := range doc.Rows {
		names[r.Name] = true
		if r.Unit == "" {
			t.Errorf("row %q has no unit", r.Name)
		}
		if (r.P50 == nil) != (r.P99 == nil) || (r.P50 == nil) == (r.Value == nil) {
			t.Errorf("row %q must have p50 and p99, or value", r.Name)
		}
	}
	want := []string{
		rowEcho, rowReqReply, rowPubSub1, rowPubSub50, rowFsync,
		rowAccepted, rowDelivered, rowPipelined, rowFanin, rowFaninSer, rowAsk,
		rowList(cfg.Presence[0].Sessions, false), rowRSS(cfg.Presence[0].Sessions, false),
		rowColdFresh, rowColdExist, rowIdleCPU,
		rowHookWall, rowHookCLI, rowHookFloor, rowHookCPU, rowFloorCPU, rowStormRate, rowStormCPU, rowStormMsgs,
		rowClientSendCPU, rowClientRecvCPU, rowClientFloorCPU, rowFaninClientCPU, rowBridgeLatency, rowBridgeFanin, rowBridgeCPU,
	}
	for _, n := range want {
		if !names[n] {
			t.Errorf("missing row %q", n)
		}
	}
	for _, k := range []string{"accepted_p50_vs_floor", "delivered_p50_vs_floor", "fanin_vs_floor"} {
		if v, ok := doc.Ratios[k]; !ok || !(v > 0) {
			t.Errorf("ratio %s = %v (present %v), want a positive number", k, v, ok)
		}
	}
}
