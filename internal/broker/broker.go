// Package broker is the intercom daemon: an embedded NATS server that never
// listens on the network, reached through the Unix-socket gateway, with
// presence, durable inboxes and asks kept in the Badger store.
package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/gateway"
	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/internal/pidfile"
	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Options configure a broker.
type Options struct {
	Layout   paths.Layout
	IdleExit time.Duration // 0: never exit for idleness
	// RetryMemory is how long the broker remembers a client message id, a
	// publication's client id and an ack of an id it has not stored, so
	// that a retry within it is answered duplicate. 0 means
	// DefaultRetryMemory.
	RetryMemory time.Duration
	// ForgetAfter is how long a disconnected session that never held a
	// message is kept (gc.go); 0 keeps it forever.
	ForgetAfter time.Duration
	Logger      *slog.Logger
	Ready       func() // called once the socket accepts clients (Run only)
}

// DefaultRetryMemory is the retry memory of a broker whose Options leave
// it 0.
const DefaultRetryMemory = 24 * time.Hour

// retryMemory is the TTL of retry-memory entries.
func (b *Broker) retryMemory() time.Duration {
	if b.opts.RetryMemory > 0 {
		return b.opts.RetryMemory
	}
	return DefaultRetryMemory
}

// ErrAlreadyRunning is returned when another broker holds the state dir.
var ErrAlreadyRunning = errors.New("another broker is running")

// Broker is a running intercom broker.
type Broker struct {
	opts  Options
	log   *slog.Logger
	srv   *server.Server
	nc    *nats.Conn // service connection, account INTERCOM
	sys   *nats.Conn // system account connection, for connect/disconnect events
	st    *store.Store
	gw    *gateway.Gateway
	lock  *os.File
	seq   *store.Sequence
	cmt   *store.Committer
	idle  chan struct{}
	start time.Time

	mu         sync.Mutex
	sessions   map[string]*session
	byCID      map[uint64]map[string]bool // holder connection -> its session ids
	clients    map[uint64]bool            // client connections other than our own
	gone       map[uint64]time.Time       // recently closed connections (register races)
	asks       map[string]*ask
	replace    map[replaceKey]string          // newest undelivered replace message: "id key"
	dedupe     map[string]string              // client message ids accepted, not yet committed
	targets    map[string]string              // display targets; nil after sessions change
	waiters    map[string][]*waiter           // intercom wait / inbox --wait
	traces     map[string]*trace              // push/fetch times of unacked messages
	tlog       traceLog                       // trace events on their way to the store
	remotes    map[string]*remoteHost         // bridged hosts
	remoteWait map[string]chan wire.BridgeAck // senders waiting for remote acceptance
	led        *ledger                        // in-memory counts of the store (ledger.go)
	bridgeRep  *wire.BridgeState              // the local bridge's last report
	idleT      *time.Timer
	sweepT     *time.Timer    // next forgetting sweep (gc.go)
	sweeping   sync.WaitGroup // a sweep in progress; joined before the store closes
	closed     bool

	storeDown     chan struct{} // closed once the store is unavailable
	storeDownOnce sync.Once
	closeOnce     sync.Once
	closeDone     chan struct{}
	releaseOnce   sync.Once
}

const (
	accountName = "INTERCOM"
	sysAccount  = "SYS"
	agentUser   = "agent"
	brokerUser  = "broker"
	sysUser     = "sys"
)

// Run starts a broker and serves until ctx is cancelled, it idles out, or
// its store becomes unavailable (then it returns an error wrapping
// ErrStoreUnavailable, after answering the waiting requests with it).
func Run(ctx context.Context, opts Options) error {
	b, err := Start(opts)
	if err != nil {
		return err
	}
	if opts.Ready != nil {
		opts.Ready()
	}
	select {
	case <-ctx.Done():
		b.log.Info("shutting down", "reason", "signal")
	case <-b.idle:
		b.log.Info("shutting down", "reason", "idle", "idle_exit", opts.IdleExit)
	case <-b.storeDown:
	}
	b.Close()
	if err := b.st.Err(); err != nil {
		return err
	}
	return nil
}

// Start brings a broker up: private dirs, the broker lock, the store, the
// NATS server, the API, the gateway and the pid file.
func Start(opts Options) (_ *Broker, err error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	l := opts.Layout
	if err := paths.EnsurePrivateDir(l.Home); err != nil {
		return nil, err
	}
	b := &Broker{
		opts: opts, log: log, idle: make(chan struct{}), start: time.Now(), storeDown: make(chan struct{}), closeDone: make(chan struct{}),
		sessions: map[string]*session{}, byCID: map[uint64]map[string]bool{}, clients: map[uint64]bool{}, gone: map[uint64]time.Time{},
		asks: map[string]*ask{}, replace: map[replaceKey]string{}, dedupe: map[string]string{},
		waiters: map[string][]*waiter{}, traces: map[string]*trace{},
		remotes: map[string]*remoteHost{}, remoteWait: map[string]chan wire.BridgeAck{}, led: newLedger(),
	}
	var natsDone chan error // the NATS server starts while the store opens
	defer func() {
		if natsDone != nil {
			if nerr := <-natsDone; err == nil {
				err = nerr
			}
		}
		if err != nil {
			b.Close()
		}
	}()
	if b.lock, err = lockBroker(l.BrokerLock(), 5*time.Second); err != nil {
		return nil, err
	}
	// The socket directory is made under the lock: a predecessor removes it
	// when it exits (Close), before it releases the lock.
	if err := paths.EnsurePrivateDir(l.SocketDir()); err != nil {
		return nil, fmt.Errorf("unsafe intercom socket directory: %w", err)
	}
	natsDone = make(chan error, 1)
	go func() { natsDone <- b.startNATS() }()
	if b.st, err = store.Open(l.DBDir(), log); err != nil {
		return nil, err
	}
	if b.seq, err = store.NewSequence(b.st); err != nil {
		return nil, err
	}
	if err = b.loadSessions(); err != nil {
		return nil, err
	}
	if err = b.loadRemotes(); err != nil {
		return nil, err
	}
	if err = b.led.load(b.st); err != nil {
		return nil, err
	}
	b.cmt = store.NewCommitter(b.st, store.CommitterOptions{Log: log, Unavailable: b.storeFailed, Errors: classify})
	b.startTraceWriter()
	err, natsDone = <-natsDone, nil
	if err != nil {
		return nil, err
	}
	if err = b.subscribe(); err != nil {
		return nil, err
	}
	if b.gw, err = gateway.Listen(l.Socket, b.srv.InProcessConn, log.With("component", "gateway")); err != nil {
		return nil, err
	}
	go func() { _ = b.gw.Serve(context.Background()) }()
	if err = pidfile.Write(l.PidFile()); err != nil {
		return nil, err
	}
	go b.watchStore()
	b.mu.Lock()
	b.armIdleLocked()
	b.armSweepLocked()
	known := len(b.sessions) // clients may register already
	b.mu.Unlock()
	log.Info("broker ready", "socket", l.Socket, "home", l.Home, "pid", os.Getpid(), "sessions", known)
	return b, nil
}

// lockBroker takes an exclusive flock held for the broker's life, waiting a
// little for a predecessor that is shutting down.
func lockBroker(path string, wait time.Duration) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open broker lock: %w", err)
	}
	deadline := time.Now().Add(wait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%w for %s (lock %s held)", ErrAlreadyRunning, filepathDir(path), path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func filepathDir(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return p
}

func randomSecret() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (b *Broker) startNATS() error {
	acc := server.NewAccount(accountName)
	sysAcc := server.NewAccount(sysAccount)
	brokerPass, sysPass := randomSecret(), randomSecret()
	agentPerms := &server.Permissions{
		Publish: &server.SubjectPermission{
			Allow: []string{wire.SubjectPrefix + "*", wire.SubjectPrefix + "bridge.*", "_INBOX.>"},
		},
		Subscribe: &server.SubjectPermission{
			Allow: []string{"_INBOX.>", wire.Deliver("*", "*"), wire.SubjectPrefix + "bridge.out.*", wire.SubjectPrefix + "bridge.rpc.*"},
		},
	}
	sopts := &server.Options{
		ServerName:    "intercom-broker",
		DontListen:    true,
		NoSigs:        true,
		MaxPayload:    8 << 20,
		MaxPending:    64 << 20,
		Accounts:      []*server.Account{acc, sysAcc},
		SystemAccount: sysAccount,
		Users: []*server.User{
			{Username: agentUser, Password: randomSecret(), Account: acc, Permissions: agentPerms},
			{Username: brokerUser, Password: brokerPass, Account: acc},
			{Username: sysUser, Password: sysPass, Account: sysAcc},
		},
		NoAuthUser: agentUser,
	}
	srv, err := server.NewServer(sopts)
	if err != nil {
		return fmt.Errorf("create nats server: %w", err)
	}
	srv.SetLoggerV2(natsLogger{b.log.With("component", "nats")}, false, false, false)
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		return errors.New("start nats server: not ready after 10s")
	}
	b.srv = srv
	if b.nc, err = nats.Connect("", nats.InProcessServer(srv), nats.UserInfo(brokerUser, brokerPass), nats.Name("intercom-broker"), nats.NoReconnect()); err != nil {
		return fmt.Errorf("connect service: %w", err)
	}
	if b.sys, err = nats.Connect("", nats.InProcessServer(srv), nats.UserInfo(sysUser, sysPass), nats.Name("intercom-broker-sys"), nats.NoReconnect()); err != nil {
		return fmt.Errorf("connect system account: %w", err)
	}
	return nil
}

// handle registers a request handler that decodes Req and replies with the
// Reply envelope. Handlers run serially per subject, in arrival order.
func handle[Req, Res any](b *Broker, subj string, fn func(Req) (*Res, error)) error {
	sub, err := b.nc.Subscribe(subj, func(m *nats.Msg) {
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
	if err != nil {
		return err
	}
	return sub.SetPendingLimits(-1, -1)
}

func respond(m *nats.Msg, v any) {
	if m.Reply == "" {
		return
	}
	data, _ := json.Marshal(v)
	_ = m.Respond(data)
}

func (b *Broker) subscribe() error {
	errs := []error{
		handle(b, wire.SubjRegister, b.register),
		handle(b, wire.SubjUnreg, b.unregister),
		handle(b, wire.SubjList, b.list),
		handle(b, wire.SubjState, b.setState),
		handle(b, wire.SubjPing, func(struct{}) (*wire.Empty, error) { return &wire.Empty{}, nil }),
		handle(b, wire.SubjStats, b.stats),
		handle(b, wire.SubjPending, b.pending),
		handle(b, wire.SubjInbox, b.inbox),
		handle(b, wire.SubjForget, b.forget),
		handle(b, wire.SubjAskCancel, b.askCancel),
		handle(b, wire.SubjAskWait, b.askWait),
		handle(b, wire.SubjSubscribe, b.subscribeTopic),
		handle(b, wire.SubjUnsub, b.unsubscribeTopic),
		handle(b, wire.SubjTopics, b.topicsAnywhere),
		handle(b, wire.SubjBridgePresence, b.bridgePresence),
		handle(b, wire.SubjTrace, b.traceOf),
		handle(b, wire.SubjBridgeOutbox, b.bridgeOutbox),
		handle(b, wire.SubjBridgeTopic, b.bridgeTopic),
		handle(b, wire.SubjBridgeState, b.bridgeState),
		handle(b, wire.SubjBridgeStatus, b.bridgeStatus),
		handle(b, wire.SubjBridgePurge, b.bridgePurge),
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("subscribe api: %w", err)
	}
	// send and ack go through the ordered commit pipeline.
	for subj, fn := range map[string]func(*nats.Msg){wire.SubjSend: b.onSend, wire.SubjAck: b.onAck, wire.SubjPublish: b.onPublish,
		wire.SubjBridgeAck: b.onBridgeAck, wire.SubjBridgeDeliver: b.onBridgeDeliver, wire.SubjInboxWait: b.onInboxWait} {
		sub, err := b.nc.Subscribe(subj, fn)
		if err != nil {
			return fmt.Errorf("subscribe %s: %w", subj, err)
		}
		_ = sub.SetPendingLimits(-1, -1)
	}
	// One subscription for both connection events: a client's CONNECT and
	// DISCONNECT are then handled in the order the server emitted them (two
	// subscriptions run their handlers concurrently, and a disconnect handled
	// first would leave the client counted forever).
	connect, disconnect := fmt.Sprintf("$SYS.ACCOUNT.%s.CONNECT", accountName), fmt.Sprintf("$SYS.ACCOUNT.%s.DISCONNECT", accountName)
	sub, err := b.sys.Subscribe(fmt.Sprintf("$SYS.ACCOUNT.%s.*", accountName), func(m *nats.Msg) {
		switch m.Subject {
		case connect:
			b.onConnect(m)
		case disconnect:
			b.onDisconnect(m)
		}
	})
	if err != nil {
		return fmt.Errorf("subscribe events: %w", err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	// Both connections' subscriptions must be live in the server before the
	// gateway accepts a client, or its first request finds no responder.
	if err := b.nc.Flush(); err != nil {
		return fmt.Errorf("subscribe api: %w", err)
	}
	return b.sys.Flush()
}

func (b *Broker) onConnect(m *nats.Msg) {
	var ev server.ConnectEventMsg
	if json.Unmarshal(m.Data, &ev) != nil || ev.Client.User == brokerUser {
		return
	}
	// A connection that closed before its authorisation finished has its
	// disconnect event reported on another account: ask the server.
	if !b.connOpen(ev.Client.ID) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, closed := b.gone[ev.Client.ID]; closed {
		return
	}
	b.clients[ev.Client.ID] = true
	b.armIdleLocked()
}

func (b *Broker) onDisconnect(m *nats.Msg) {
	var ev server.DisconnectEventMsg
	if json.Unmarshal(m.Data, &ev) != nil || ev.Client.User == brokerUser {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.clients, ev.Client.ID)
	b.gone[ev.Client.ID] = time.Now()
	if len(b.gone) > 10000 {
		for cid, t := range b.gone {
			if time.Since(t) > time.Minute {
				delete(b.gone, cid)
			}
		}
	}
	for sid := range b.byCID[ev.Client.ID] {
		if s := b.sessions[sid]; s != nil && s.cid == ev.Client.ID {
			b.detachLocked(s, "disconnected")
		}
	}
	delete(b.byCID, ev.Client.ID)
	b.armIdleLocked()
}

// connOpen reports whether the NATS client cid is connected now.
func (b *Broker) connOpen(cid uint64) bool {
	cz, err := b.srv.Connz(&server.ConnzOptions{CID: cid})
	return err == nil && len(cz.Conns) == 1 && cz.Conns[0].Stop == nil
}

// armIdleLocked starts the idle-exit timer when no client is connected and
// stops it otherwise.
func (b *Broker) armIdleLocked() {
	if b.opts.IdleExit <= 0 || b.closed {
		return
	}
	if len(b.clients) > 0 {
		if b.idleT != nil {
			b.idleT.Stop()
			b.idleT = nil
		}
		return
	}
	if b.idleT != nil {
		return
	}
	b.idleT = time.AfterFunc(b.opts.IdleExit, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.idleT = nil
		if len(b.clients) == 0 && !b.closed {
			b.closed = true
			close(b.idle)
		}
	})
}

// Close shuts the broker down: no new connections, queued writes drained
// to disk and answered, NATS stopped, the store closed, socket and pid file
// removed. Whatever the store is doing, it returns within shutdownWait (a
// write or flush into a failing disk may never end; everything accepted is
// already in Badger's write-ahead log). It is idempotent.
func (b *Broker) Close() {
	b.closeOnce.Do(func() {
		go func() {
			defer close(b.closeDone)
			b.shutdown()
		}()
	})
	select {
	case <-b.closeDone:
	case <-time.After(shutdownWait):
		b.log.Warn("shutdown did not finish in time; exiting without closing the store (everything accepted is in its write-ahead log)", "waited", shutdownWait)
		b.release()
	}
}

func (b *Broker) shutdown() {
	b.mu.Lock()
	if b.idleT != nil {
		b.idleT.Stop()
	}
	if b.sweepT != nil {
		b.sweepT.Stop()
	}
	b.closed = true
	for _, r := range b.remotes {
		if r.stale != nil {
			r.stale.Stop()
		}
	}
	for _, a := range b.asks {
		if a.timer != nil {
			a.timer.Stop()
		}
	}
	b.mu.Unlock()
	if b.gw != nil {
		b.gw.StopAccepting()
	}
	if b.cmt != nil {
		b.stopTraceWriter()
		b.cmt.Close()
	}
	if b.nc != nil {
		_ = b.nc.FlushTimeout(time.Second) // answers reach the server before it stops
	}
	if b.srv != nil {
		b.srv.Shutdown() // flushes what clients were sent, then closes them
		b.srv.WaitForShutdown()
	}
	if b.gw != nil {
		b.gw.Close()
	}
	if b.nc != nil {
		b.nc.Close()
	}
	if b.sys != nil {
		b.sys.Close()
	}
	b.sweeping.Wait()
	if b.st != nil {
		b.closeStore()
	}
	// Our private socket directory goes with us once we served on it (so it
	// was checked to be ours); a directory named by INTERCOM_SOCKET is the
	// user's and stays. A non-empty one stays too.
	if l := b.opts.Layout; b.lock != nil && b.gw != nil && l.SocketDir() == paths.SocketDirFor(l.Home) {
		if err := os.Remove(l.SocketDir()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			b.log.Debug("keep socket directory", "dir", l.SocketDir(), "err", err)
		}
	}
	b.release()
}

// release removes the pid file and drops the broker lock, once.
func (b *Broker) release() {
	b.releaseOnce.Do(func() {
		if b.lock != nil {
			pidfile.Remove(b.opts.Layout.PidFile())
			b.lock.Close()
		}
	})
}
