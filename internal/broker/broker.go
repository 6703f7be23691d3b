// Package broker is the intercom daemon: an embedded NATS server that never
// listens on the network, reached through the Unix-socket gateway, with
// presence, durable inboxes, asks and topics kept in the store. Its state
// is split by subsystem, each a type with its own lock (see Broker and
// docs/architecture.md).
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/flock"
	"github.com/intercom-dev/intercom/internal/gateway"
	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/internal/pidfile"
	"github.com/intercom-dev/intercom/internal/store"
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
	// Wake bounds how often peers wake an idle session (wake.go); nil means
	// DefaultWakeLimits.
	Wake   *WakeLimits
	Logger *slog.Logger
	Ready  func() // called once the socket accepts clients (Run only)

	// Stuck says when a session shows as stuck (stuck.go); zero: never.
	Stuck StallThresholds

	// Without lists API subjects this broker leaves unanswered, as a
	// broker that predates them does (tests of the fallbacks, e.g.
	// wire.SubjBridgeBatch); empty in production.
	Without []string
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

// Broker is a running intercom broker. Its state lives in subsystems, each
// guarding its own maps with its own mutex. Where one calls another under
// its lock, the order is: sendState, then sessionTable, then askTable, then
// delivery or routeTable, then waiterTable or traceTable; ledger and
// idleWatch are leaves. No lock is held across a store commit or a NATS
// request.
type Broker struct {
	opts   Options
	log    *slog.Logger
	srv    *server.Server
	nc     *nats.Conn // service connection, account INTERCOM
	answer replyBatch // send replies sent at the end of their commit batch (send_reply.go)
	subs   []*nats.Subscription
	calls  calls // request handlers running
	st     *store.Store
	gw     *gateway.Gateway
	gwDone chan struct{} // closed when the gateway stopped serving
	lock   *os.File
	seq    *store.Sequence
	cmt    *store.Committer
	start  time.Time
	tasks  *tasks // goroutines and timers, joined by Close

	sessions *sessionTable // sessions and presence (sessions.go, list.go)
	deliv    *delivery     // pushes to holders (delivery.go)
	asks     *askTable     // reply obligations (asks.go)
	sends    *sendState    // sends being committed (send.go)
	waiters  *waiterTable  // intercom wait (waiters.go)
	traces   *traceTable   // delivery timelines (trace.go)
	routes   *routeTable   // bridged hosts (bridge.go)
	kicks    outboxKicks   // numbered outbox announcements (outbox_kick.go)
	ledger   *ledger       // in-memory counts of the store (ledger.go)
	lists    listBudget    // bridged hosts' topic listings (listcost.go)
	idle     *idleWatch    // idle exit (idle.go)
	listed   rowCache      // encoded list rows (list_reply.go)
	hist     historyKeeper // kept messages and records (history.go)

	resv *reservationTable // holders' activity (reservations.go)

	persons personTable  // who is a person (person.go)
	inbound inboundTable // held messages (inbound.go)

	storeDown     chan struct{} // closed once the store is unavailable
	storeDownOnce sync.Once
	closeOnce     sync.Once
	closeDone     chan struct{}
	closeErr      error // set before closeDone is closed
	releaseOnce   sync.Once
}

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
	case <-b.idle.fired:
		b.log.Info("shutting down", "reason", "idle", "idle_exit", opts.IdleExit)
	case <-b.storeDown:
	}
	if err := b.Close(); errors.Is(err, ErrStoreUnavailable) {
		return err
	}
	return nil // other trouble closing was logged
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
	b := &Broker{opts: opts, log: log, start: time.Now(), tasks: newTasks(), storeDown: make(chan struct{}), closeDone: make(chan struct{})}
	b.calls.idle.L = &b.calls.mu
	b.traces, b.waiters, b.sends, b.ledger = newTraceTable(), newWaiterTable(), newSendState(), newLedger()
	b.ledger.keepFor = b.retryMemory()
	b.asks, b.routes, b.idle = newAskTable(b.tasks, b.publish, askResumeGrace(opts.Layout)), newRouteTable(b.tasks), newIdleWatch(opts.IdleExit, b.tasks)
	var natsDone chan error // the NATS server starts while the store opens
	defer func() {
		if natsDone != nil {
			if nerr := <-natsDone; err == nil {
				err = nerr
			}
		}
		if err != nil {
			_ = b.Close()
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
	// The ledger counts the stored messages during the store's own scan
	// of them at open (the message index's).
	if b.st, err = store.OpenVisiting(l.DBDir(), log, b.ledger.loadMessage); err != nil {
		return nil, err
	}
	b.deliv = newDelivery(b.st, log, b.tasks, b.waiters, b.traces, b.publish, opts.wakeLimits())
	b.sessions = newSessionTable(b.asks, b.deliv)
	b.sessions.stalls = stallRule{StallThresholds: opts.Stuck, ledger: b.ledger}
	if b.resv, err = newReservationTable(b.st); err != nil {
		return nil, err
	}
	if b.seq, err = store.NewSequence(b.st); err != nil {
		return nil, err
	}
	if err = b.sessions.load(b.st); err != nil {
		return nil, err
	}
	if err = b.routes.load(b.st); err != nil {
		return nil, err
	}
	if err = b.ledger.load(b.st); err != nil {
		return nil, err
	}
	b.cmt = store.NewCommitter(b.st, store.CommitterOptions{Log: log, Unavailable: b.storeFailed, Errors: classify, AfterBatch: b.flushReplies, Applied: b.announceApplied})
	b.traces.startWriter(b.cmt, log)
	err, natsDone = <-natsDone, nil
	if err != nil {
		return nil, err
	}
	if err = b.subscribe(); err != nil {
		return nil, err
	}
	if b.gw, err = gateway.Listen(l.Socket, b.srv.InProcessConn, connWatcher{b}, log.With("component", "gateway")); err != nil {
		return nil, err
	}
	b.gwDone = make(chan struct{})
	go func() {
		defer close(b.gwDone)
		_ = b.gw.Serve(context.Background())
	}()
	if err = pidfile.Write(l.PidFile()); err != nil {
		return nil, err
	}
	b.tasks.Go(b.watchStore)
	b.idle.arm()
	b.armSweep()
	b.armReservationSweep()
	known, _ := b.sessions.counts() // clients may register already
	log.Info("broker ready", "socket", l.Socket, "home", l.Home, "pid", os.Getpid(), "sessions", known)
	return b, nil
}

// lockBroker takes an exclusive flock held for the broker's life, waiting a
// little for a predecessor that is shutting down.
func lockBroker(path string, wait time.Duration) (*os.File, error) {
	f, err := flock.Acquire(context.Background(), path, wait, 50*time.Millisecond)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, fmt.Errorf("%w for %s (lock %s held)", ErrAlreadyRunning, filepath.Dir(path), path)
	}
	return f, err
}
