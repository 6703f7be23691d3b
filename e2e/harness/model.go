//go:build harness

// Package harness drives the real Claude Code, Codex and Gemini CLIs, headless,
// against scripted stand-ins of their model APIs on 127.0.0.1, after a real
// `intercom install`, and asserts on what the model was sent. It runs with
// `make test-harness` (build tag harness); `make test` never builds it.
package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Turn is one scripted model answer: text, tool calls, or both.
type Turn struct {
	// If, when set, holds the turn back until a request satisfies it; until
	// then the model answers with a plain closing text.
	If func(r *Request) bool
	// Before, when set, runs before the answer is sent (to make something
	// happen at an exact point of the agent's turn).
	Before func(r *Request)
	Text   string
	Calls  []Call
	// Hang, when set, never answers: the request is held until the client
	// goes away (Model.Dropped counts those) or the test ends, a model
	// that stalls.
	Hang bool
}

// Call is one tool call the model makes.
type Call struct {
	Name      string
	Namespace string // Responses API: the tool's namespace (Codex's MCP tools)
	Args      any    // marshalled to the tool's JSON input
}

// Request is one recorded request from a harness to its model API.
type Request struct {
	N    int    // order of arrival, from 1
	Path string // URL path
	Body []byte
	JSON map[string]any
	// Main is true for requests of the agent's own conversation (they
	// offer tools); false for the harness's side requests.
	Main bool
	// Answered is the index of the scripted turn used, or -1.
	Answered int
}

// Contains reports whether the request body holds s.
func (r *Request) Contains(s string) bool { return strings.Contains(r.Text(), s) }

// Count is how often s occurs in the request's strings.
func (r *Request) Count(s string) int { return strings.Count(r.Text(), s) }

// Text is every string in the request body, one per line: what the model
// reads (system prompt, messages, tool results, injected context).
func (r *Request) Text() string {
	var b strings.Builder
	writeStrings(&b, r.JSON)
	return b.String()
}

// writeStrings writes every string inside a decoded JSON value, one a line.
func writeStrings(b *strings.Builder, v any) {
	switch x := v.(type) {
	case string:
		b.WriteString(x)
		b.WriteByte('\n')
	case []any:
		for _, e := range x {
			writeStrings(b, e)
		}
	case map[string]any:
		for _, e := range x {
			writeStrings(b, e)
		}
	}
}

// Model is a scripted stand-in of a model API, listening on 127.0.0.1.
type Model struct {
	t      *testing.T
	URL    string // http://127.0.0.1:PORT
	mu     sync.Mutex
	turns  []Turn
	next   int
	reqs   []*Request
	srv    *http.Server
	notify chan struct{}
	api    wire
	gone   chan struct{} // closed as the test ends: hung requests return
	drops  int           // hung requests whose client went away
}

// wire is how one API's stand-in tells and answers requests.
type wire struct {
	path   string                                              // the conversation endpoint
	prefix bool                                                // path is a prefix (the model is in the path)
	isMain func(body map[string]any) bool                      // the agent's conversation, not a side request
	answer func(w http.ResponseWriter, r *Request, turn *Turn) // the scripted (or default) reply
	other  func(w http.ResponseWriter, req *http.Request) bool // other endpoints; false: 404
}

// newModel serves api on a fresh 127.0.0.1 port until the test ends.
func newModel(t *testing.T, api wire) *Model {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &Model{t: t, URL: "http://" + l.Addr().String(), api: api, notify: make(chan struct{}), gone: make(chan struct{})}
	m.srv = &http.Server{Handler: http.HandlerFunc(m.serve)}
	go func() { _ = m.srv.Serve(l) }()
	t.Cleanup(func() {
		close(m.gone)
		_ = m.srv.Close()
	})
	return m
}

// Script appends turns to the model's script and returns the index of the
// first one (Request.Answered counts the same way).
func (m *Model) Script(turns ...Turn) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	first := len(m.turns)
	m.turns = append(m.turns, turns...)
	return first
}

// Answered returns the request answered with scripted turn i (nil if none).
func (m *Model) Answered(i int) *Request {
	for _, r := range m.Requests() {
		if r.Answered == i {
			return r
		}
	}
	return nil
}

// Requests returns the recorded requests so far.
func (m *Model) Requests() []*Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*Request(nil), m.reqs...)
}

// Main returns the recorded requests of the agent's conversation.
func (m *Model) Main() []*Request {
	var out []*Request
	for _, r := range m.Requests() {
		if r.Main {
			out = append(out, r)
		}
	}
	return out
}

// Last is the last request of the agent's conversation (nil if none).
func (m *Model) Last() *Request {
	main := m.Main()
	if len(main) == 0 {
		return nil
	}
	return main[len(main)-1]
}

// Used is how many scripted turns have been answered.
func (m *Model) Used() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.next
}

// Changed returns a channel closed at the next recorded request.
func (m *Model) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.notify
}

func (m *Model) serve(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != m.api.path && !(m.api.prefix && strings.HasPrefix(req.URL.Path, m.api.path)) {
		if m.api.other != nil && m.api.other(w, req) {
			return
		}
		http.NotFound(w, req)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r := &Request{Path: req.URL.Path, Body: body, Answered: -1}
	if err := json.Unmarshal(body, &r.JSON); err != nil {
		http.Error(w, "stand-in: body is not JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.Main = m.api.isMain(r.JSON)
	m.mu.Lock()
	r.N = len(m.reqs) + 1
	m.reqs = append(m.reqs, r)
	var turn *Turn
	if r.Main && m.next < len(m.turns) {
		cand := m.turns[m.next]
		if cand.If == nil || cand.If(r) {
			turn = &cand
			r.Answered = m.next
			m.next++
		}
	}
	close(m.notify)
	m.notify = make(chan struct{})
	m.mu.Unlock()
	if turn != nil && turn.Before != nil {
		turn.Before(r)
	}
	if turn != nil && turn.Hang {
		m.hang(req)
		return
	}
	m.api.answer(w, r, turn)
}

// hang holds a request unanswered until its client goes away (counted in
// drops, and announced like a request) or the test ends.
func (m *Model) hang(req *http.Request) {
	select {
	case <-m.gone:
	case <-req.Context().Done():
		m.mu.Lock()
		m.drops++
		close(m.notify)
		m.notify = make(chan struct{})
		m.mu.Unlock()
	}
}

// Dropped is how many hung requests (Turn.Hang) their client gave up on.
func (m *Model) Dropped() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.drops
}

// Dump renders every recorded request, for failure logs.
func (m *Model) Dump() string {
	var b strings.Builder
	for _, r := range m.Requests() {
		fmt.Fprintf(&b, "=== request %d %s main=%v turn=%d\n%s\n", r.N, r.Path, r.Main, r.Answered, r.Body)
	}
	return b.String()
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// sse writes one server-sent event and flushes it.
func sse(w http.ResponseWriter, event string, data any) {
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, mustJSON(data))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
