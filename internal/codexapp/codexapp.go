// Package codexapp speaks to `codex app-server`, Codex's JSON-RPC API over
// stdio (one JSON object per line) that its own /hooks screen uses: enough
// of it to list the hooks Codex would run, with their trust, and to call
// any other method (config/batchWrite trusts them). intercom doctor and the
// harness tests use it.
package codexapp

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// Hook is one hook as hooks/list reports it. Its Key is
// "FILE:event:group:index" (the hooks file it came from).
type Hook struct {
	Key         string `json:"key"`
	Command     string `json:"command"`
	EventName   string `json:"eventName"`
	CurrentHash string `json:"currentHash"`
	TrustStatus string `json:"trustStatus"` // trusted, untrusted, modified
}

// Server is a running `codex app-server`, initialized.
type Server struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *lastLine
	next   int
}

// Start runs cmd, a `codex app-server` command the caller prepared (its
// context, environment, directory), and does the initialize handshake.
func Start(cmd *exec.Cmd, client, version string) (*Server, error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &Server{cmd: cmd, in: in, out: bufio.NewScanner(out), stderr: &lastLine{}}
	cmd.Stderr = s.stderr
	s.out.Buffer(make([]byte, 0, 1<<16), 16<<20)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if _, err := s.Call("initialize", map[string]any{"clientInfo": map[string]any{"name": client, "version": version}}); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.send(map[string]any{"method": "initialized"}); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) send(msg map[string]any) error {
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = s.in.Write(append(data, '\n'))
	return err
}

// Call sends one request and returns its result, skipping notifications.
func (s *Server) Call(method string, params any) (json.RawMessage, error) {
	s.next++
	id := s.next
	if err := s.send(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return nil, fmt.Errorf("codex app-server %s: %w", method, err)
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
	why := s.stderr.String()
	if err := s.out.Err(); err != nil {
		why = err.Error()
	}
	return nil, fmt.Errorf("codex app-server %s: no answer (%s)", method, why)
}

// Hooks lists the hooks Codex would run in dir, with their trust.
func (s *Server) Hooks(dir string) ([]Hook, error) {
	raw, err := s.Call("hooks/list", map[string]any{"cwds": []string{dir}})
	if err != nil {
		return nil, err
	}
	var res struct {
		Data []struct {
			Hooks []Hook `json:"hooks"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Data) == 0 {
		return nil, fmt.Errorf("codex app-server hooks/list: unexpected answer %.200s", raw)
	}
	return res.Data[0].Hooks, nil
}

// Close ends the server (its stdin closed) and waits for it.
func (s *Server) Close() error {
	_ = s.in.Close()
	err := s.cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil // killed by its context, or ended on EOF with a status
	}
	return err
}

// lastLine keeps the last non-empty line written to it.
type lastLine struct {
	mu   sync.Mutex
	last string
	part strings.Builder
}

func (l *lastLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range p {
		if b != '\n' {
			if l.part.Len() < 4096 {
				l.part.WriteByte(b)
			}
			continue
		}
		if s := strings.TrimSpace(l.part.String()); s != "" {
			l.last = s
		}
		l.part.Reset()
	}
	return len(p), nil
}

func (l *lastLine) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := strings.TrimSpace(l.part.String()); s != "" {
		return s
	}
	return l.last
}
