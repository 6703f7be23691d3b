// Command bench measures intercom against the raw floor of its own design,
// in one process run, on one machine: a Unix-socket echo, NATS request/reply
// and pub/sub through the same Unix-socket gateway with no intercom logic, and
// one fsync'd Badger write; then the real broker binary driven through
// pkg/intercom (latency, throughput, asks, presence scale, cold start, idle
// cost). It prints a Markdown table and writes JSON to $BENCH_OUT (default
// bench-results.json).
//
//	go run ./e2e/bench            # full run (a few minutes)
//	go run ./e2e/bench -quick     # reduced, under a minute
//
// The broker binary is $INTERCOM_BROKER, or -broker, or built from
// ./cmd/intercom-broker into a temporary directory.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	if floorServerMain() {
		return
	}
	quick := flag.Bool("quick", false, "reduced run (under a minute)")
	broker := flag.String("broker", "", "intercom-broker binary (default $INTERCOM_BROKER, else built from ./cmd/intercom-broker)")
	out := flag.String("out", "", "JSON results file (default $BENCH_OUT, else bench-results.json)")
	profDir := flag.String("profile-dir", "", "write the broker's CPU and allocation profiles of each scenario into this directory")
	only := flag.String("only", "", "comma-separated scenarios to run (floor,latency,ask,pipelined,client,fanin,fanin-serial,presence,coldstart,idle,bridge,bridge-fanin,hooks,search,history-cost)")
	keep := flag.Bool("keep", false, "keep the temporary directory (homes, broker logs)")
	flag.Parse()

	cfg := fullConfig()
	if *quick {
		cfg = quickConfig()
	}
	cfg.Broker = *broker
	if cfg.Broker == "" {
		cfg.Broker = os.Getenv("INTERCOM_BROKER")
	}
	cfg.CLI = os.Getenv("INTERCOM_CLI")
	cfg.Out = *out
	if cfg.Out == "" {
		cfg.Out = os.Getenv("BENCH_OUT")
	}
	if cfg.Out == "" {
		cfg.Out = "bench-results.json"
	}
	cfg.ProfileDir = *profDir
	cfg.Keep = *keep
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
	}

	ctx, cancel := context.WithCancel(context.Background())
	h := newProcOwner()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "bench: interrupted; stopping brokers")
		cancel()
		select {
		case <-sigs:
		case <-time.After(10 * time.Second):
		}
		h.killAll()
		os.Exit(130)
	}()

	err := run(ctx, h, cfg, os.Stdout, os.Stderr)
	h.killAll()
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
