// Package hookclient is the broker client of harness hooks (intercom-hook,
// `intercom hook`): the few requests a hook makes (its boundary, the ack
// of what it handed over, a state report, a wait, the reservations check),
// each one request and one reply over the broker's socket, in the NATS
// protocol's text form (conn.go).
//
// It exists for what it does not link: every tool call of every agent
// starts a hook process, and nats.go's start-up (crypto/tls, net/http and
// the packages they pull in) costs a small Go program's whole start again
// before it does anything. The hook needs none of its reconnection,
// subscriptions or TLS: a hook that loses its broker says so in one line
// and the next hook delivers what this one did not, so a failed request
// is safe. What a hook showed but could not get acknowledged is journaled
// (package ackjournal) as pkg/intercom does. Like pkg/intercom it starts
// the broker when none answers (package spawn).
package hookclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/intercom-dev/intercom/internal/ackjournal"
	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/internal/spawn"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Options configure a client, as intercom.Options do.
type Options struct {
	Home, Socket  string // "" for INTERCOM_HOME / INTERCOM_SOCKET, else the defaults
	BrokerCommand string
	BrokerArgs    []string
	Timeout       time.Duration // per request (default wire.DefaultRequestTimeout)
	Logger        *slog.Logger
	NoSpawn       bool // never start a broker
	// ExistingHome: the home must exist already; a missing one is an error
	// (spawn.ErrHomeGone), not created with a broker started in it.
	ExistingHome bool
}

// Client is one connection to the broker, for one goroutine.
type Client struct {
	k       *conn
	sp      *spawn.Spawner // dials again when a broker died before greeting
	layout  paths.Layout
	timeout time.Duration
	log     *slog.Logger
	journal ackjournal.Journal
}

// Connect dials the broker of o's home, starting one when none answers.
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
	sp := &spawn.Spawner{Layout: layout, Command: o.BrokerCommand, Args: o.BrokerArgs, AutoSpawn: !o.NoSpawn, ExistingHome: o.ExistingHome}
	nc, err := sp.Dial(ctx)
	if err != nil {
		return nil, err
	}
	return &Client{k: newConn(nc), sp: sp, layout: layout, timeout: o.Timeout, log: o.Logger, journal: ackjournal.Journal{Dir: layout.AcksDir()}}, nil
}

// Home is the home this client's broker serves.
func (c *Client) Home() string { return c.layout.Home }

// Requests is how many requests this client has made.
func (c *Client) Requests() uint64 { return c.k.next }

// Close ends the connection.
func (c *Client) Close() { _ = c.k.c.Close() }

// call sends one API request and decodes the reply envelope with decode.
// A broker that does not answer in time is spawn.ErrNoBroker; one that
// has no responder to subj is wire.ErrNoBoundary for the boundary request
// and spawn.ErrNoBroker otherwise. When ctx ends first, the connection is
// shut down (a blocked read can be ended no other way): the request fails
// with ctx's error, and any later one on this client fails too.
func call[Res any](ctx context.Context, c *Client, subj string, req any, decode func([]byte) (wire.Reply[Res], error)) (*Res, error) {
	data, err := encode(req)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", subj, err)
	}
	raw, err := c.request(ctx, subj, data)
	switch {
	case errors.Is(err, spawn.ErrHomeGone): // dialling again found the home deleted
		return nil, err
	case errors.Is(err, errNoResponders) && subj == wire.SubjBoundary:
		return nil, fmt.Errorf("%w: %v", wire.ErrNoBoundary, err)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: %w", subj, ctx.Err())
	case isTimeout(err):
		if _, ok := ctx.Deadline(); ok { // the connection's deadline was ctx's
			return nil, fmt.Errorf("%s: %w", subj, context.DeadlineExceeded)
		}
		return nil, fmt.Errorf("%w: no answer to %s in %v", spawn.ErrNoBroker, subj, c.timeout)
	case err != nil:
		return nil, fmt.Errorf("%w: %s: %v", spawn.ErrNoBroker, subj, err)
	}
	out, err := decode(raw)
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

// request is one request on the connection. A connection that ended
// before the broker said a word (a broker killed or restarting had it in
// its listener's queue) carried the request to no one: it is dialled
// again, starting a broker if need be, and the request sent again, up to
// redials times.
func (c *Client) request(ctx context.Context, subj string, data []byte) ([]byte, error) {
	for try := 0; ; try++ {
		stop := context.AfterFunc(ctx, c.k.c.Interrupt)
		raw, err := c.k.request(deadline(ctx, c.timeout), subj, data)
		stop()
		if !errors.Is(err, errUnheard) || try >= redials || ctx.Err() != nil {
			return raw, err
		}
		c.log.Debug("broker went away before greeting; dialling again", "err", err)
		select {
		case <-time.After(time.Duration(try+1) * 50 * time.Millisecond):
		case <-ctx.Done():
			return nil, err
		}
		nc, derr := c.sp.Dial(ctx)
		if derr != nil {
			return nil, derr
		}
		sent := c.k.next
		_ = c.k.c.Close()
		c.k = newConn(nc)
		c.k.next = sent
	}
}

// redials bounds request's dialling again.
const redials = 3

// encode is req as JSON: its own AppendJSON where it has one (no
// reflection), else json.Marshal.
func encode(req any) ([]byte, error) {
	if a, ok := req.(interface{ AppendJSON([]byte) []byte }); ok {
		return a.AppendJSON(nil), nil
	}
	return json.Marshal(req)
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// decodeJSON is call's decoder for replies without a faster one.
func decodeJSON[Res any](data []byte) (wire.Reply[Res], error) {
	var out wire.Reply[Res]
	err := json.Unmarshal(data, &out)
	return out, err
}

// Boundary reports status of held session sid and, with fetch, fetches
// what may be delivered now (wire.SubjBoundary), leaving out what the ack
// journal owes; journaled acks are settled first.
func (c *Client) Boundary(ctx context.Context, sid, status string, fetch bool) (wire.BoundaryReply, error) {
	if fetch {
		c.settleJournal(ctx, sid)
	}
	res, err := call(ctx, c, wire.SubjBoundary, wire.BoundaryRequest{SessionID: sid, Status: status, Fetch: fetch}, wire.DecodeBoundaryReply)
	if err != nil {
		return wire.BoundaryReply{}, err
	}
	res.Messages = c.journal.Without(sid, res.Messages)
	return *res, nil
}

// SetState reports sid's status.
func (c *Client) SetState(ctx context.Context, sid, status string, acceptsAsks *bool) (wire.Session, error) {
	res, err := call(ctx, c, wire.SubjState, wire.StateRequest{SessionID: sid, Status: status, AcceptsAsks: acceptsAsks}, decodeJSON[wire.Session])
	if err != nil {
		return wire.Session{}, err
	}
	return *res, nil
}

// Inbox fetches sid's deliverable messages (recorded as fetched).
func (c *Client) Inbox(ctx context.Context, sid string, limit int) ([]wire.Message, error) {
	return c.inbox(ctx, wire.InboxRequest{SessionID: sid, Limit: limit})
}

// Peek is Inbox without recording a fetch.
func (c *Client) Peek(ctx context.Context, sid string, limit int) ([]wire.Message, error) {
	return c.inbox(ctx, wire.InboxRequest{SessionID: sid, Limit: limit, Peek: true})
}

func (c *Client) inbox(ctx context.Context, req wire.InboxRequest) ([]wire.Message, error) {
	c.settleJournal(ctx, req.SessionID)
	res, err := call(ctx, c, wire.SubjInbox, req, decodeJSON[wire.InboxReply])
	if err != nil {
		return nil, err
	}
	return c.journal.Without(req.SessionID, res.Messages), nil
}

// AckShown acknowledges messages of sid this process showed; what the
// broker does not confirm is journaled, so that the session's next fetch
// and its holder ack those messages instead of showing them again.
func (c *Client) AckShown(ctx context.Context, sid string, ids ...string) error {
	for rest := ids; len(rest) > 0; {
		chunk := rest[:min(len(rest), wire.MaxAckIDs)]
		rest = rest[len(chunk):]
		if _, err := c.ack(ctx, sid, chunk); err != nil {
			if jerr := c.journal.Add(sid, append(chunk, rest...)); jerr != nil {
				c.log.Warn("journal unconfirmed acks", "session", sid, "err", jerr)
			}
			return err
		}
	}
	return nil
}

func (c *Client) ack(ctx context.Context, sid string, ids []string) (*wire.AckReply, error) {
	return call(ctx, c, wire.SubjAck, wire.AckRequest{SessionID: sid, IDs: ids}, decodeJSON[wire.AckReply])
}

// settleJournal sends the acks journaled for sid; confirmed ones (and
// those the broker refuses as unknown) leave the journal. A failure leaves
// them for the next fetch or the holder.
func (c *Client) settleJournal(ctx context.Context, sid string) {
	ids := c.journal.List(sid)
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), wire.MaxAckIDs)]
		ids = ids[len(chunk):]
		if _, err := c.ack(ctx, sid, chunk); err != nil {
			var we *wire.Error
			if !errors.As(err, &we) || we.Code != wire.CodeBadRequest {
				c.log.Debug("journaled acks not confirmed", "session", sid, "err", err)
				return
			}
		}
		c.journal.Remove(sid, chunk)
	}
}

// Connected reports whether sid is known and held.
func (c *Client) Connected(ctx context.Context, sid string) (bool, error) {
	res, err := call(ctx, c, wire.SubjList, wire.ListRequest{Scope: "all", IncludeDisconnected: true, ID: sid}, wire.DecodeListReply)
	if err != nil {
		return false, err
	}
	for _, r := range res.Sessions {
		if r.ID == sid && r.Connected {
			return true, nil
		}
	}
	return false, nil
}

// WaitInbox blocks until sid has a deliverable message (Ready) or timeout
// passes. With wakeOnly, passive messages are ignored.
func (c *Client) WaitInbox(ctx context.Context, sid string, timeout time.Duration, wakeOnly bool) (wire.InboxWaitReply, error) {
	end := time.Now().Add(timeout)
	for left := timeout; left > 0; left = time.Until(end) {
		rctx, cancel := context.WithTimeout(ctx, left+c.timeout)
		// At least 1 ms: the broker reads 0 as its longest wait.
		res, err := call(rctx, c, wire.SubjInboxWait, wire.InboxWaitRequest{SessionID: sid, TimeoutMs: max(left.Milliseconds(), 1), WakeOnly: wakeOnly}, decodeJSON[wire.InboxWaitReply])
		cancel()
		if err != nil {
			return wire.InboxWaitReply{}, err
		}
		if res.Ready {
			return *res, nil
		}
	}
	return wire.InboxWaitReply{}, nil
}

// Reservations lists the leases the broker keeps (wire.SubjReservations).
func (c *Client) Reservations(ctx context.Context, req wire.ReservationsRequest) (wire.ReservationsReply, error) {
	res, err := call(ctx, c, wire.SubjReservations, req, decodeJSON[wire.ReservationsReply])
	if err != nil {
		return wire.ReservationsReply{}, err
	}
	return *res, nil
}
