// Package intercom is the Go client of the intercom broker: it finds (and if
// needed starts) the broker, registers and holds sessions, lists presence,
// and sends, asks, replies and acknowledges messages. Every intercom CLI is
// built on it; other programs can embed it.
//
//	c, err := intercom.Connect(ctx, intercom.Options{})
//	defer c.Close()
//	s, err := c.Attach(ctx, intercom.AttachOptions{Name: "worker"})
//	for m := range s.Messages() { ...; s.Ack(ctx, m.ID) }
package intercom

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"time"

	json "github.com/goccy/go-json"
	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/internal/presence"
	"github.com/intercom-dev/intercom/internal/project"
	"github.com/intercom-dev/intercom/internal/spawn"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Options configure a client.
type Options struct {
	Home          string        // INTERCOM_HOME; "" uses the environment/default
	Socket        string        // INTERCOM_SOCKET override
	NoSpawn       bool          // never start a broker
	BrokerCommand string        // broker binary ("" finds intercom-broker)
	BrokerArgs    []string      // extra broker arguments
	Name          string        // connection name, for logs
	Timeout       time.Duration // per request (default wire.DefaultRequestTimeout)
	Logger        *slog.Logger
	// ExistingHome: the home must exist already (the caller is continuing
	// work there); if it is missing, Connect returns ErrHomeGone instead
	// of creating it and starting a broker. Reconnects always behave so.
	ExistingHome bool
}

// Client is a connection to the broker. It reconnects by itself (and
// restarts the broker if needed) when the broker goes away.
type Client struct {
	nc      *nats.Conn
	layout  paths.Layout
	timeout time.Duration
	log     *slog.Logger

	mu       sync.Mutex
	holders  map[*Session]bool
	hooks    []func()
	closed   bool
	reconnMu sync.Mutex
	ended    chan struct{} // closed when the client stopped for good (end)
	endErr   error
	endOnce  sync.Once
	reconn   chan struct{} // closed at the next reconnection
	async    asyncSends    // pipelined sends (send_async.go)
	ids      msgIDs        // client message ids (msgids.go)
}

// Connect dials the broker, starting one when none answers. A broker that
// closes the connection before its handshake ends (killed, restarting) is
// dialled again, a few times; one that does not answer in time is not.
func Connect(ctx context.Context, o Options) (*Client, error) {
	layout, err := paths.Resolve(o.Home, o.Socket)
	if err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = wire.DefaultRequestTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{layout: layout, timeout: o.Timeout, log: o.Logger, holders: map[*Session]bool{}, ended: make(chan struct{}), reconn: make(chan struct{})}
	sp := &spawn.Spawner{Layout: layout, Command: o.BrokerCommand, Args: o.BrokerArgs, AutoSpawn: !o.NoSpawn, ExistingHome: o.ExistingHome}
	// The first dial happens here so that its error is ours, not NATS's.
	first, err := dialNet(ctx, sp)
	if err != nil {
		return nil, err
	}
	// From now on the home is known to have existed: if it disappears, the
	// client ends rather than start a broker in a new, empty one.
	sp.ExistingHome = true
	name := o.Name
	if name == "" {
		name = "intercom-client"
	}
	// A broker that dies (killed, restarting) between accepting the
	// connection and greeting it resets it: dial again, starting a new
	// broker if need be, rather than fail a command that merely met the
	// moment of a restart. Nothing has been asked of the broker yet.
	for attempt := 1; ; attempt++ {
		if first != nil {
			var nc *nats.Conn
			if nc, err = c.connectNATS(sp, first, name); err == nil {
				c.nc = nc
				return c, nil
			}
		}
		if attempt >= connectAttempts || !wentAway(err) || !sleepCtx(ctx, backoff(attempt-1)) {
			if first == nil { // the dial's error, ours (the home gone, say)
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", ErrNoBroker, err)
		}
		c.log.Debug("broker went away during the handshake; dialling again", "err", err, "attempt", attempt+1)
		first, err = dialNet(ctx, sp)
	}
}

// connectAttempts bounds Connect's handshakes with brokers that go away
// during them (backoff's first steps between them: about 2 s in all).
const connectAttempts = 6

// sleepCtx waits d, or less if ctx ends first (then false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// connectNATS is the NATS handshake over first (a connection already
// dialled, or nil to dial one), reconnecting through sp for life.
func (c *Client) connectNATS(sp *spawn.Spawner, first net.Conn, name string) (*nats.Conn, error) {
	d := &dialer{sp: sp, first: first, gone: c.end}
	return nats.Connect("nats://intercom.invalid:4222",
		nats.SetCustomDialer(d),
		nats.Name(name),
		// The URL is a placeholder for the custom dialer: never resolve it
		// (a DNS lookup costs milliseconds, and seconds when the resolver
		// stalls, while the pre-dialed connection idles out).
		nats.SkipHostLookup(),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(backoff),
		nats.ReconnectBufSize(16<<20),
		nats.Timeout(5*time.Second),
		nats.ReconnectHandler(func(*nats.Conn) { go c.onReconnect() }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				c.log.Debug("disconnected from broker", "err", err)
			}
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			c.log.Warn("nats", "err", err)
		}),
	)
}

// backoff is the reconnect delay: quick at first, capped at 5 s, jittered.
func backoff(attempts int) time.Duration {
	steps := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second}
	d := steps[min(attempts, len(steps)-1)]
	return d + time.Duration(rand.Int64N(int64(d/4)+1))
}

type dialer struct {
	sp    *spawn.Spawner
	mu    sync.Mutex
	first net.Conn
	gone  func(error) // told when the home has disappeared
}

func (d *dialer) Dial(_, _ string) (net.Conn, error) {
	d.mu.Lock()
	if c := d.first; c != nil {
		d.first = nil
		d.mu.Unlock()
		return c, nil
	}
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := dialNet(ctx, d.sp)
	if errors.Is(err, spawn.ErrHomeGone) {
		d.gone(err)
	}
	return c, err
}

// dialNet is sp.Dial's connection as a net.Conn (on the runtime's network
// poller, as NATS wants it).
func dialNet(ctx context.Context, sp *spawn.Spawner) (net.Conn, error) {
	raw, err := sp.Dial(ctx)
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	_ = raw.SetDeadline(time.Time{}) // the dial's own bound off: the poller's deadlines rule
	f, err := raw.File()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoBroker, err)
	}
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoBroker, err)
	}
	return c, nil
}

// end stops the client for good with err: it closes the connection (no
// more reconnects), and Done and Err report it.
func (c *Client) end(err error) {
	c.endOnce.Do(func() {
		c.mu.Lock()
		c.endErr = err
		c.mu.Unlock()
		c.log.Debug("client stopped", "err", err)
		close(c.ended)
		go c.Close() // not from the reconnect goroutine that told us
	})
}

// Done is closed when the client has stopped by itself for good: its
// INTERCOM_HOME was deleted while in use (Err says so). A holder should
// then exit.
func (c *Client) Done() <-chan struct{} { return c.ended }

// Err is why the client stopped by itself (wrapping ErrHomeGone), or nil.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.endErr
}

// OnReconnect registers fn to run (in its own goroutine) after every
// reconnection to a broker, once held sessions are re-registered.
func (c *Client) OnReconnect(fn func()) {
	c.mu.Lock()
	c.hooks = append(c.hooks, fn)
	c.mu.Unlock()
}

// Home is the state directory this client uses (INTERCOM_HOME).
func (c *Client) Home() string { return c.layout.Home }

// Socket is the broker socket this client dials.
func (c *Client) Socket() string { return c.layout.Socket }

// Conn exposes the underlying NATS connection (for tests and tools).
func (c *Client) Conn() *nats.Conn { return c.nc }

// Close ends the connection; held sessions become disconnected.
func (c *Client) Close() {
	c.mu.Lock()
	c.closed = true
	hs := c.holders
	c.holders = map[*Session]bool{}
	c.mu.Unlock()
	for s := range hs {
		s.stop()
	}
	if c.nc != nil {
		c.nc.Close()
	}
}

// call sends one API request and decodes the reply envelope.
func call[Res any](ctx context.Context, c *Client, subj string, req any) (*Res, error) {
	return callDecoding(ctx, c, subj, req, func(data []byte) (wire.Reply[Res], error) {
		var out wire.Reply[Res]
		err := json.Unmarshal(data, &out)
		return out, err
	})
}

// callDecoding is call with the reply read by decode.
func callDecoding[Res any](ctx context.Context, c *Client, subj string, req any, decode func([]byte) (wire.Reply[Res], error)) (*Res, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", subj, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	msg, err := c.nc.RequestWithContext(ctx, subj, data)
	if err != nil {
		if e := c.Err(); e != nil {
			return nil, e
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
			return nil, fmt.Errorf("%w: no answer to %s in time", ErrNoBroker, subj)
		}
		return nil, fmt.Errorf("%s: %w", subj, err)
	}
	out, err := decode(msg.Data)
	if err != nil {
		return nil, fmt.Errorf("decode %s reply: %w", subj, err)
	}
	if out.Error != nil {
		return nil, out.Error
	}
	if out.Result == nil {
		return nil, fmt.Errorf("%s: empty reply", subj)
	}
	return out.Result, nil
}

// Ping checks that the broker answers.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.BrokerVersion(ctx)
	return err
}

// BrokerVersion asks the broker which build it runs ("" for a broker that
// predates the answer).
func (c *Client) BrokerVersion(ctx context.Context) (string, error) {
	p, err := call[wire.Pong](ctx, c, wire.SubjPing, struct{}{})
	if err != nil {
		return "", err
	}
	return p.Version, nil
}

// ListOptions select presence rows.
type ListOptions struct {
	Self                string // session id of the caller, marked Self
	Scope               string // "project" (default) or "all"
	Cwd                 string // project of this dir ("" = current dir)
	IncludeDisconnected bool
	ID                  string // only this session (see wire.ListRequest)
}

// List returns sessions.
func (c *Client) List(ctx context.Context, o ListOptions) ([]wire.Session, error) {
	proj := ""
	if o.Scope != "all" { // only the project scope filters by project
		_, proj = Here(o.Cwd)
	}
	res, err := callDecoding(ctx, c, wire.SubjList, wire.ListRequest{
		Self: o.Self, Project: proj, Scope: o.Scope, IncludeDisconnected: o.IncludeDisconnected, ID: o.ID,
	}, wire.DecodeListReply)
	if err != nil {
		return nil, err
	}
	return res.Sessions, nil
}

// Find resolves target (a session name, id, id prefix or name@host) among
// every session the broker knows, connected ones first.
func (c *Client) Find(ctx context.Context, target string) (wire.Session, error) {
	rows, err := c.List(ctx, ListOptions{Scope: "all", IncludeDisconnected: true})
	if err != nil {
		return wire.Session{}, err
	}
	ptrs := make([]*wire.Session, len(rows))
	for i := range rows {
		ptrs[i] = &rows[i]
	}
	s, err := presence.Resolve(ptrs, target, "")
	if err != nil {
		return wire.Session{}, err
	}
	return *s, nil
}

// Here returns the absolute working directory (dir or the current one) and
// its project identity.
func Here(dir string) (string, string) {
	if dir == "" {
		dir, _ = os.Getwd()
	}
	return dir, project.Of(dir)
}

// SetState reports a session's lifecycle status (idle, thinking,
// tool:NAME) and optionally whether it accepts asks.
func (c *Client) SetState(ctx context.Context, id, status string, acceptsAsks *bool) (wire.Session, error) {
	res, err := call[wire.Session](ctx, c, wire.SubjState, wire.StateRequest{SessionID: id, Status: status, AcceptsAsks: acceptsAsks})
	if err != nil {
		return wire.Session{}, err
	}
	return *res, nil
}

// Send submits a message and returns once the broker has stored it durably.
// A ClientMsgID is generated when empty; the request is retried with it
// across broker restarts until ctx ends, and the broker stores it once.
func (c *Client) Send(ctx context.Context, req wire.SendRequest) (wire.SendReply, error) {
	if req.ClientMsgID == "" {
		req.ClientMsgID = c.ids.next()
	}
	req.BatchReply = false // its answer comes on the request's own inbox
	res, err := callRetrying[wire.SendReply](ctx, c, wire.SubjSend, req)
	if err != nil {
		return wire.SendReply{}, err
	}
	return *res, nil
}

// callRetrying is call, repeated while the broker is unreachable (being
// restarted), for requests that carry a client message id and so are
// applied once however often they are sent. Without a deadline of the
// caller's, retries stop after a few request timeouts: a broker that keeps
// dying must not hang the caller.
func callRetrying[Res any](ctx context.Context, c *Client, subj string, req any) (*Res, error) {
	giveUp := time.Now().Add(4 * c.timeout)
	if d, ok := ctx.Deadline(); ok {
		giveUp = d
	}
	for {
		res, err := call[Res](ctx, c, subj, req)
		if err == nil {
			return res, nil
		}
		if !errors.Is(err, ErrNoBroker) && !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, nats.ErrConnectionClosed) {
			return nil, err
		}
		if ctx.Err() != nil || c.isClosed() || time.Now().After(giveUp) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Ack confirms that messages were handed on; they are never delivered again.
// It is one request: a holder acks through Session.Ack, a process that
// fetched with Inbox through AckShown, which both keep a failed ack.
func (c *Client) Ack(ctx context.Context, sessionID string, ids ...string) (int, error) {
	res, err := call[wire.AckReply](ctx, c, wire.SubjAck, wire.AckRequest{SessionID: sessionID, IDs: ids})
	if err != nil {
		return 0, err
	}
	return res.Acked, nil
}

// Pending lists unresolved asks addressed to a session.
func (c *Client) Pending(ctx context.Context, sessionID string) ([]wire.PendingAsk, error) {
	res, err := call[wire.PendingReply](ctx, c, wire.SubjPending, wire.SessionRef{SessionID: sessionID})
	if err != nil {
		return nil, err
	}
	return res.Asks, nil
}

// Forget removes a disconnected session and everything in its inbox.
func (c *Client) Forget(ctx context.Context, sessionID string) error {
	_, err := call[wire.Empty](ctx, c, wire.SubjForget, wire.SessionRef{SessionID: sessionID})
	return err
}

// Unregister marks a session disconnected (it stays known and keeps
// receiving into its inbox).
func (c *Client) Unregister(ctx context.Context, sessionID string) error {
	_, err := call[wire.Empty](ctx, c, wire.SubjUnreg, wire.SessionRef{SessionID: sessionID})
	return err
}

// Call makes one raw API request (subject from package wire) and decodes the
// result; broker errors come back as *wire.Error. It is for tools that speak
// parts of the API this package does not wrap (the bridge, for one).
func Call[Res any](ctx context.Context, c *Client, subject string, req any) (*Res, error) {
	return call[Res](ctx, c, subject, req)
}

// InboxWait blocks until sessionID has a deliverable message (true) or
// timeout passes (false). It does not take the message: use Inbox.
// With wakeOnly, passive messages (which never wake anyone) are ignored.
// It outlives a broker restart: the wait is asked again once the client has
// reconnected, so a message stored meanwhile ends it.
func (c *Client) InboxWait(ctx context.Context, sessionID string, timeout time.Duration, wakeOnly bool) (bool, error) {
	res, err := c.WaitInbox(ctx, sessionID, timeout, wakeOnly)
	return res.Ready, err
}

// WaitInbox is InboxWait that also returns the messages which ended the
// wait by arriving for the session's delivering holder (attach), which may
// have taken them already.
func (c *Client) WaitInbox(ctx context.Context, sessionID string, timeout time.Duration, wakeOnly bool) (wire.InboxWaitReply, error) {
	deadline := time.Now().Add(timeout)
	var none wire.InboxWaitReply
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return none, nil
		}
		reconnected := c.nextReconnect()
		rctx, cancel := context.WithTimeout(ctx, left+c.timeout)
		go func() {
			select {
			case <-reconnected:
				cancel() // the broker that had the wait is gone: ask the new one
			case <-rctx.Done():
			}
		}()
		// At least 1 ms: the broker reads 0 as its longest wait.
		ms := max(left.Milliseconds(), 1)
		res, err := call[wire.InboxWaitReply](rctx, c, wire.SubjInboxWait, wire.InboxWaitRequest{SessionID: sessionID, TimeoutMs: ms, WakeOnly: wakeOnly})
		cancel()
		switch {
		case err == nil && res.Ready:
			return *res, nil
		case err == nil:
			continue
		case ctx.Err() != nil:
			return none, ctx.Err()
		case c.isClosed():
			return none, err
		}
		select {
		case <-reconnected:
		default:
			if !Unavailable(err) {
				return none, err
			}
			select { // the broker is away: look again once it is back
			case <-ctx.Done():
				return none, ctx.Err()
			case <-c.nextReconnect():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
}

// nextReconnect returns a channel closed at the client's next reconnection.
func (c *Client) nextReconnect() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reconn
}

// Trace returns a message's delivery timeline.
func (c *Client) Trace(ctx context.Context, id string) (wire.Trace, error) {
	res, err := call[wire.Trace](ctx, c, wire.SubjTrace, wire.TraceRequest{ID: id})
	if err != nil {
		return wire.Trace{}, err
	}
	return *res, nil
}
