package broker

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	json "github.com/goccy/go-json"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/buildinfo"
	"github.com/intercom-dev/intercom/internal/gateway"
	"github.com/intercom-dev/intercom/internal/natslog"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// The embedded NATS server, the broker's two connections to it, and the
// request subscriptions.

const (
	accountName = "INTERCOM"
	agentUser   = "agent"
	brokerUser  = "broker"
)

func randomSecret() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (b *Broker) startNATS() error {
	acc := server.NewAccount(accountName)
	brokerPass := randomSecret()
	agentPerms := &server.Permissions{
		Publish: &server.SubjectPermission{
			Allow: []string{wire.SubjectPrefix + "*", wire.SubjectPrefix + "bridge.*", "_INBOX.>"},
		},
		Subscribe: &server.SubjectPermission{
			Allow: []string{"_INBOX.>", wire.Deliver("*", "*"), wire.SubjectPrefix + "bridge.out.*", wire.SubjectPrefix + "bridge.rpc.*"},
		},
	}
	sopts := &server.Options{
		ServerName: "intercom-broker",
		DontListen: true,
		NoSigs:     true,
		MaxPayload: 8 << 20,
		MaxPending: 64 << 20,
		Accounts:   []*server.Account{acc},
		// No system account: the broker learns of its clients' connections
		// from the gateway (connWatcher), and the server's own events
		// (connect, disconnect, the account's connection counts: six
		// JSON-encoded messages a connection) were a sixth of the CPU a
		// hook's connection cost it.
		NoSystemAccount: true,
		// A spare connection the gateway dials ahead waits for its client
		// without a CONNECT (gateway.ServerAuthTimeout).
		AuthTimeout: gateway.ServerAuthTimeout.Seconds(),
		Users: []*server.User{
			{Username: agentUser, Password: randomSecret(), Account: acc, Permissions: agentPerms},
			{Username: brokerUser, Password: brokerPass, Account: acc},
		},
		NoAuthUser: agentUser,
	}
	srv, err := server.NewServer(sopts)
	if err != nil {
		return fmt.Errorf("create nats server: %w", err)
	}
	// The broker's per-run random credentials, never on disk, make the
	// server warn of plaintext passwords: expected here.
	srv.SetLoggerV2(natslog.Logger{L: b.log.With("component", "nats"), Expected: []string{"Plaintext passwords"}}, false, false, false)
	b.srv = srv // shut down by Close, whatever happens next
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		return errors.New("start nats server: not ready after 10s")
	}
	if b.nc, err = nats.Connect("", nats.InProcessServer(srv), nats.UserInfo(brokerUser, brokerPass), nats.Name("intercom-broker"), nats.NoReconnect()); err != nil {
		return fmt.Errorf("connect service: %w", err)
	}
	return nil
}

// calls counts the request handlers running, so that Close can wait for
// the last one; once closed it admits none. idle.L is mu (set by Start).
type calls struct {
	mu     sync.Mutex
	idle   sync.Cond
	n      int
	closed bool
}

func (c *calls) enter() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.n++
	return true
}

func (c *calls) leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	if c.n == 0 {
		c.idle.Broadcast()
	}
}

// close admits no more calls and waits for the running ones.
func (c *calls) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for c.n > 0 {
		c.idle.Wait()
	}
}

// listen subscribes fn to subj on conn, counted in b.calls, without a
// pending limit.
func (b *Broker) listen(conn *nats.Conn, subj string, fn nats.MsgHandler) error {
	if slices.Contains(b.opts.Without, subj) {
		return nil // an older broker: nobody answers subj
	}
	sub, err := conn.Subscribe(subj, func(m *nats.Msg) {
		if !b.calls.enter() {
			return // the broker is stopping: the client asks the next one
		}
		defer b.calls.leave()
		fn(m)
	})
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", subj, err)
	}
	b.subs = append(b.subs, sub)
	return sub.SetPendingLimits(-1, -1)
}

// handle registers a request handler that decodes Req and replies with the
// Reply envelope. Handlers run serially per subject, in arrival order.
func handle[Req, Res any](b *Broker, subj string, fn func(Req) (*Res, error)) error {
	return b.listen(b.nc, subj, func(m *nats.Msg) {
		var req Req
		var out wire.Reply[Res]
		if err := json.Unmarshal(m.Data, &req); err != nil {
			out.Error = wire.Errorf(wire.CodeBadRequest, "decode %s request: %v", subj, err)
		} else if res, err := fn(req); err != nil {
			out.Error = toWireError(err)
		} else {
			out.Result = res
		}
		respond(m, out)
	})
}

func respond(m *nats.Msg, v any) {
	if m.Reply == "" {
		return
	}
	data, _ := json.Marshal(v)
	if answeredInBatch(m, data) {
		return
	}
	_ = m.Respond(data)
}

// publish sends v as JSON on subj; the pushed messages (one, or a batch)
// are written without reflection (wire.AppendMessage).
func (b *Broker) publish(subj string, v any) {
	var data []byte
	switch v := v.(type) {
	case *wire.Message:
		data = wire.AppendMessage(make([]byte, 0, 256+v.Size()), v)
	case []*wire.Message:
		data = wire.AppendMessages(make([]byte, 0, 1024), v)
	default:
		data, _ = json.Marshal(v)
	}
	if err := b.nc.Publish(subj, data); err != nil {
		b.log.Warn("publish", "subject", subj, "err", err)
	}
}

func (b *Broker) subscribe() error {
	errs := []error{
		handle(b, wire.SubjRegister, b.register),
		handle(b, wire.SubjUnreg, b.unregister),
		handle(b, wire.SubjState, b.setState),
		handle(b, wire.SubjPing, func(struct{}) (*wire.Pong, error) { return &wire.Pong{Version: buildinfo.Version()}, nil }),
		handle(b, wire.SubjStats, b.stats),
		handle(b, wire.SubjPending, b.pending),
		handle(b, wire.SubjInbox, b.inbox),
		handle(b, wire.SubjBoundary, b.boundary), // boundary.go
		handle(b, wire.SubjForget, b.forget),
		handle(b, wire.SubjAskCancel, b.askCancel),
		handle(b, wire.SubjAskWait, b.askWait),
		handle(b, wire.SubjSubscribe, b.subscribeTopic),
		handle(b, wire.SubjUnsub, b.unsubscribeTopic),
		handle(b, wire.SubjTopics, b.topicsAnywhere),
		handle(b, wire.SubjBridgePresence, b.bridgePresence),
		handle(b, wire.SubjTrace, b.traceOf),
		handle(b, wire.SubjHeld, b.heldList), handle(b, wire.SubjHeldDecide, b.heldDecide),
		handle(b, wire.SubjHistory, b.historyPage), handle(b, wire.SubjHistoryPurge, b.historyPurge),
		handle(b, wire.SubjReserve, b.reserve),
		handle(b, wire.SubjRelease, b.releaseReservations),
		handle(b, wire.SubjReservations, b.reservationsOf),
		handle(b, wire.SubjBridgeOutbox, b.bridgeOutbox),
		handle(b, wire.SubjBridgeTopic, b.bridgeTopic),
		handle(b, wire.SubjBridgeState, b.bridgeState),
		handle(b, wire.SubjBridgeStatus, b.bridgeStatus),
		handle(b, wire.SubjBridgePurge, b.bridgePurge),
		b.listen(b.nc, wire.SubjList, b.onList), // a reply encoded without reflection
		// send and ack go through the ordered commit pipeline.
		b.listen(b.nc, wire.SubjSend, b.onSend),
		b.listen(b.nc, wire.SubjAck, b.onAck),
		b.listen(b.nc, wire.SubjPublish, b.onPublish),
		b.listen(b.nc, wire.SubjBridgeAck, b.onBridgeAck),
		b.listen(b.nc, wire.SubjBridgeDeliver, b.onBridgeDeliver),
		b.listen(b.nc, wire.SubjBridgeBatch, b.onBridgeDeliverBatch),
		b.listen(b.nc, wire.SubjBridgeAckBatch, b.onBridgeAckBatch),
		b.listen(b.nc, wire.SubjInboxWait, b.onInboxWait),
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("subscribe api: %w", err)
	}
	// The subscriptions must be live in the server before the gateway
	// accepts a client, or its first request finds no responder.
	if err := b.nc.Flush(); err != nil {
		return fmt.Errorf("subscribe api: %w", err)
	}
	return nil
}

// drainRequests stops taking requests and the gateway's connection news
// (connWatcher): every subscription handles what it has received and ends,
// then the last handler returns. The committer is still running meanwhile
// (handlers submit to it).
func (b *Broker) drainRequests() {
	var ended []<-chan nats.SubStatus
	for _, sub := range b.subs {
		ch := sub.StatusChanged(nats.SubscriptionClosed)
		if err := sub.Drain(); err != nil {
			b.log.Debug("drain subscription", "subject", sub.Subject, "err", err)
			continue
		}
		ended = append(ended, ch)
	}
	for _, ch := range ended {
		for range ch { // closed once the subscription is
		}
	}
	b.calls.close()
}
