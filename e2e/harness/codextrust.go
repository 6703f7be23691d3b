//go:build harness

package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"time"
)

// CodexHook is one hook as Codex's `hooks/list` reports it.
type CodexHook struct {
	Key         string `json:"key"`
	Command     string `json:"command"`
	EventName   string `json:"eventName"`
	CurrentHash string `json:"currentHash"`
	TrustStatus string `json:"trustStatus"`
}

// appServer is a `codex app-server` session over stdio (JSON-RPC lines):
// the API Codex's own /hooks screen uses to review and trust hooks.
type appServer struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	next int
}

func (w *World) startAppServer() (*appServer, error) {
	ctx, cancel := withTimeout(2 * time.Minute)
	c := exec.CommandContext(ctx, codexBin, "app-server")
	c.Env, c.Dir = w.Env, w.Root
	in, err := c.StdinPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	out, err := c.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	if err := c.Start(); err != nil {
		cancel()
		return nil, err
	}
	w.t.Cleanup(func() { cancel(); _ = c.Wait() })
	s := &appServer{cmd: c, in: in, out: bufio.NewScanner(out)}
	s.out.Buffer(make([]byte, 0, 1<<20), 16<<20)
	if _, err := s.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "intercom-harness-suite", "version": "0"}}); err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintln(s.in, mustJSON(map[string]any{"method": "initialized"})); err != nil {
		return nil, err
	}
	return s, nil
}

// call sends one request and returns its result, skipping notifications.
func (s *appServer) call(method string, params any) (json.RawMessage, error) {
	s.next++
	id := s.next
	if _, err := fmt.Fprintln(s.in, mustJSON(map[string]any{"id": id, "method": method, "params": params})); err != nil {
		return nil, err
	}
	for s.out.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(s.out.Bytes(), &msg) != nil || string(msg.ID) != strconv.Itoa(id) {
			continue
		}
		if len(msg.Error) > 0 {
			return nil, fmt.Errorf("codex app-server %s: %s", method, msg.Error)
		}
		return msg.Result, nil
	}
	return nil, fmt.Errorf("codex app-server %s: no answer (%v)", method, s.out.Err())
}

func (s *appServer) close() { _ = s.in.Close() }

// CodexHooks lists the hooks Codex would run in dir, with their trust.
func (w *World) CodexHooks(dir string) []CodexHook {
	w.t.Helper()
	s, err := w.startAppServer()
	if err != nil {
		w.t.Fatal(err)
	}
	defer s.close()
	hooks, err := s.hooks(dir)
	if err != nil {
		w.t.Fatal(err)
	}
	return hooks
}

func (s *appServer) hooks(dir string) ([]CodexHook, error) {
	raw, err := s.call("hooks/list", map[string]any{"cwds": []string{dir}})
	if err != nil {
		return nil, err
	}
	var res struct {
		Data []struct {
			Hooks []CodexHook `json:"hooks"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Data) == 0 {
		return nil, fmt.Errorf("codex app-server hooks/list: unexpected answer %s", raw)
	}
	return res.Data[0].Hooks, nil
}

// TrustCodexHooks trusts, as the user would in Codex's /hooks screen, the
// hooks in dir whose command satisfies ours, and returns them.
func (w *World) TrustCodexHooks(dir string, ours func(command string) bool) []CodexHook {
	w.t.Helper()
	s, err := w.startAppServer()
	if err != nil {
		w.t.Fatal(err)
	}
	defer s.close()
	hooks, err := s.hooks(dir)
	if err != nil {
		w.t.Fatal(err)
	}
	var edits []any
	var trusted []CodexHook
	for _, h := range hooks {
		if !ours(h.Command) {
			continue
		}
		edits = append(edits, map[string]any{"keyPath": "hooks.state." + strconv.Quote(h.Key) + ".trusted_hash", "mergeStrategy": "upsert", "value": h.CurrentHash})
		trusted = append(trusted, h)
	}
	if len(edits) == 0 {
		w.t.Fatalf("no hooks to trust among %+v", hooks)
	}
	if _, err := s.call("config/batchWrite", map[string]any{"edits": edits}); err != nil {
		w.t.Fatal(err)
	}
	return trusted
}
