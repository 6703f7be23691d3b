// Package web is `intercom web`: a live view of the sessions, the messages
// between them, topics and supervised runs, served to a browser on
// 127.0.0.1 only by its own process (the broker never opens a TCP port).
// It talks to the broker through pkg/intercom like every other client,
// holds a session of its own for the person at the browser, and reads the
// history through the shared search index (internal/history). Every
// request must carry the token printed in the URL (guard.go).
package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/intercom-dev/intercom/internal/history"
	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/pkg/intercom"
)

// Options configure a server.
type Options struct {
	Client *intercom.Client
	Person *intercom.Session // the person's session: sends from the page, messages to it shown
	Index  *history.Index
	Desk   runs.Desk
	Port   int    // 0: a free port
	Token  string // "": a new random one
	Log    *slog.Logger
	// Every is how often the view is refreshed from the broker (0: 500ms).
	Every time.Duration
}

// Server is a running web view.
type Server struct {
	opts  Options
	ln    net.Listener
	srv   *http.Server
	host  string // the Host header accepted: 127.0.0.1:port
	token string
	hub   *hub
	mu    sync.Mutex
	state []byte // the last state sent (JSON)
}

// Listen opens the listener on 127.0.0.1.
func Listen(opts Options) (*Server, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Every <= 0 {
		opts.Every = 500 * time.Millisecond
	}
	token := opts.Token
	if token == "" {
		var b [24]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("web token: %w", err)
		}
		token = hex.EncodeToString(b[:])
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.Port)))
	if err != nil {
		return nil, fmt.Errorf("web: listen on 127.0.0.1: %w", err)
	}
	s := &Server{opts: opts, ln: ln, token: token, hub: newHub()}
	s.host = ln.Addr().String()
	s.srv = &http.Server{Handler: s.guard(s.routes()), ReadHeaderTimeout: 10 * time.Second}
	return s, nil
}

// URL is the address to open, with the token.
func (s *Server) URL() string { return "http://" + s.host + "/?token=" + s.token }

// Addr is host:port listened on.
func (s *Server) Addr() string { return s.host }

// Token is the token every request must carry.
func (s *Server) Token() string { return s.token }

// Serve serves until ctx ends.
func (s *Server) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.watch(ctx) }()
	go func() { defer wg.Done(); s.receive(ctx) }()
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	s.hub.close()
	shut, stop := context.WithTimeout(context.Background(), 2*time.Second)
	defer stop()
	_ = s.srv.Shutdown(shut)
	cancel()
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
