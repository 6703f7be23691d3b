package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/gateway"
	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// The floor server is this same executable started again with floorEnv set
// to a directory: a separate process, like the broker, serving
//   - echo.sock: a raw Unix-socket echo;
//   - gw.sock: an embedded NATS server (DontListen) behind internal/gateway,
//     with a responder on floorSubj that echoes each request — the broker's
//     design with no intercom logic.
const (
	floorEnv    = "INTERCOM_BENCH_FLOOR_SERVER"
	floorSubj   = "floor.echo"
	floorFanout = "floor.fanin"
)

// floorServerMain serves the floor when this process was started as the
// floor server, and then exits; otherwise it returns false.
func floorServerMain() bool {
	dir := os.Getenv(floorEnv)
	if dir == "" {
		return false
	}
	if err := serveFloor(dir); err != nil {
		fmt.Fprintln(os.Stderr, "floor server:", err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

func serveFloor(dir string) error {
	eln, err := net.Listen("unix", filepath.Join(dir, "echo.sock"))
	if err != nil {
		return err
	}
	go func() {
		for {
			c, err := eln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	srv, err := server.NewServer(&server.Options{
		ServerName: "floor", DontListen: true, NoSigs: true, NoLog: true,
		MaxPayload: 8 << 20, MaxPending: 1 << 30,
	})
	if err != nil {
		return err
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		return errors.New("nats server not ready")
	}
	resp, err := nats.Connect("", nats.InProcessServer(srv), nats.Name("floor-responder"), nats.NoReconnect())
	if err != nil {
		return err
	}
	sub, err := resp.Subscribe(floorSubj, func(m *nats.Msg) { _ = m.Respond(m.Data) })
	if err != nil {
		return err
	}
	_ = sub.SetPendingLimits(-1, -1)
	if err := resp.Flush(); err != nil {
		return err
	}
	gw, err := gateway.Listen(filepath.Join(dir, "gw.sock"), srv.InProcessConn, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	go func() { _ = gw.Serve(context.Background()) }()
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin) // serve until the bench closes stdin or dies
	gw.Close()
	resp.Close()
	srv.Shutdown()
	eln.Close()
	return nil
}

// floorServer is the running floor process.
type floorServer struct {
	dir   string
	stdin io.WriteCloser
	p     *proc
	h     *procOwner
}

func startFloorServer(h *procOwner) (*floorServer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(h.root, "floor")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), floorEnv+"="+dir)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = childAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{name: "floor", pid: cmd.Process.Pid, done: make(chan struct{})}
	h.adopt(p)
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "ready" {
			err = fmt.Errorf("unexpected %q", line)
		}
		ready <- err
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		close(p.done)
	}()
	fs := &floorServer{dir: dir, stdin: stdin, p: p, h: h}
	select {
	case err := <-ready:
		if err != nil {
			fs.Stop()
			return nil, fmt.Errorf("floor server: %w", err)
		}
	case <-time.After(15 * time.Second):
		fs.Stop()
		return nil, errors.New("floor server not ready after 15s")
	}
	return fs, nil
}

func (f *floorServer) Stop() {
	f.stdin.Close()
	if !f.p.wait(5 * time.Second) {
		f.h.stop(f.p, time.Second)
	}
	f.h.forget(f.p)
}

type unixDialer struct{ path string }

func (d unixDialer) Dial(_, _ string) (net.Conn, error) { return net.Dial("unix", d.path) }

// gwConnect opens a NATS client through the floor gateway, as
// pkg/intercom does through the broker's.
func (f *floorServer) gwConnect(name string) (*nats.Conn, error) {
	return nats.Connect("nats://floor.invalid:4222", nats.SetCustomDialer(unixDialer{filepath.Join(f.dir, "gw.sock")}),
		nats.Name(name), nats.NoReconnect(), nats.ReconnectBufSize(-1), nats.SkipHostLookup())
}

// samplePayload is a JSON send request as pkg/intercom encodes it, so the
// floor moves the same bytes as intercom does.
func samplePayload(cfg config) []byte {
	req := wire.SendRequest{From: strings.Repeat("a", 32), To: "bob", Text: text(0, cfg.TextBytes), ClientMsgID: strings.Repeat("c", 32)}
	return mustJSON(req)
}

func benchFloor(ctx context.Context, h *procOwner, cfg config, r *Results) error {
	fs, err := startFloorServer(h)
	if err != nil {
		return err
	}
	defer fs.Stop()
	payload := samplePayload(cfg)

	// Raw Unix-socket echo.
	ec, err := net.Dial("unix", filepath.Join(fs.dir, "echo.sock"))
	if err != nil {
		return err
	}
	defer ec.Close()
	buf := make([]byte, len(payload))
	echo := make([]time.Duration, 0, cfg.FloorN)
	for i := 0; i < cfg.FloorN+cfg.FloorN/10; i++ {
		t0 := time.Now()
		if _, err := ec.Write(payload); err != nil {
			return err
		}
		if _, err := io.ReadFull(ec, buf); err != nil {
			return err
		}
		if i >= cfg.FloorN/10 { // the first tenth warms up
			echo = append(echo, time.Since(t0))
		}
	}
	r.lat(rowEcho, "us", echo)

	// NATS request/reply through the gateway.
	nc, err := fs.gwConnect("floor-requester")
	if err != nil {
		return err
	}
	defer nc.Close()
	rr := make([]time.Duration, 0, cfg.FloorN)
	for i := 0; i < cfg.FloorN+cfg.FloorN/10; i++ {
		t0 := time.Now()
		if _, err := nc.Request(floorSubj, payload, 10*time.Second); err != nil {
			return fmt.Errorf("request: %w", err)
		}
		if i >= cfg.FloorN/10 {
			rr = append(rr, time.Since(t0))
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	r.lat(rowReqReply, "us", rr)

	// Pub/sub throughput through the gateway: publishers blast, one
	// subscriber counts; the clock stops at the last message received.
	rate, err := floorPubSub(ctx, fs, 1, cfg.PipelineN, payload, cfg.StepTimeout)
	if err != nil {
		return fmt.Errorf("pub/sub 1: %w", err)
	}
	r.val(rowPubSub1, unitMsgPerSec, rate)
	rate, err = floorPubSub(ctx, fs, cfg.FaninSenders, cfg.FaninSenders*cfg.FaninPer, payload, cfg.StepTimeout)
	if err != nil {
		return fmt.Errorf("pub/sub %d: %w", cfg.FaninSenders, err)
	}
	r.val(rowPubSub50, unitMsgPerSec, rate)

	// One fsync'd Badger write, with the broker's store options.
	st, err := store.Open(filepath.Join(h.root, "fsync-db"), slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer st.Close()
	val := []byte(strings.Repeat("v", len(payload)))
	ws := make([]time.Duration, 0, cfg.FsyncN)
	for i := 0; i < cfg.FsyncN+cfg.FsyncN/10; i++ {
		key := fmt.Sprintf("bench/%020d", i)
		t0 := time.Now()
		if err := st.Update(func(txn *store.Txn) error { return txn.Set(key, val) }); err != nil {
			return err
		}
		if i >= cfg.FsyncN/10 {
			ws = append(ws, time.Since(t0))
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	r.lat(rowFsync, "us", ws)
	return nil
}

func floorPubSub(ctx context.Context, fs *floorServer, pubs, total int, payload []byte, timeout time.Duration) (float64, error) {
	per := total / pubs
	total = per * pubs
	sc, err := fs.gwConnect("floor-sub")
	if err != nil {
		return 0, err
	}
	defer sc.Close()
	var got atomic.Int64
	var end time.Time
	all := make(chan struct{})
	sub, err := sc.Subscribe(floorFanout, func(*nats.Msg) {
		if got.Add(1) == int64(total) {
			end = time.Now()
			close(all)
		}
	})
	if err != nil {
		return 0, err
	}
	_ = sub.SetPendingLimits(-1, -1)
	if err := sc.Flush(); err != nil {
		return 0, err
	}
	conns := make([]*nats.Conn, pubs)
	for i := range conns {
		if conns[i], err = fs.gwConnect(fmt.Sprintf("floor-pub-%d", i)); err != nil {
			return 0, err
		}
		defer conns[i].Close()
	}
	var wg sync.WaitGroup
	errs := make(chan error, pubs)
	start := time.Now()
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < per; j++ {
				if err := c.Publish(floorFanout, payload); err != nil {
					errs <- err
					return
				}
			}
			if err := c.Flush(); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	select {
	case <-all:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(timeout):
		return 0, fmt.Errorf("received %d of %d messages", got.Load(), total)
	}
	return float64(total) / end.Sub(start).Seconds(), nil
}
