package e2e

// Fault tests (issue 8): crash consistency under random kill -9 of the broker
// and of message holders, disk trouble, and hostile peers. Everything runs
// against the real broker binary, real Badger and real sockets.
//
// TestFaultCrashConsistency runs a short variant by default (about 30 s, 10
// broker kills) so that `make test` stays fast; FAULT_LONG=1 (as in
// `make test-fault`) runs the long one. FAULT_SHORT=1 forces the short one
// even when FAULT_LONG is set.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// faultPlan is the shape of one crash-consistency run.
type faultPlan struct {
	name             string
	kills            int           // broker kill -9s
	killGapMin       time.Duration // random pause before each kill
	killGapMax       time.Duration
	holderLifeMin    time.Duration // a holder lives this long before it is killed
	holderLifeMax    time.Duration
	sendPauseMax     time.Duration // random pause between two sends of one sender
	progressPerKill  int           // sends accepted between two kills, at least
	senders, targets int
}

func faultPlanFromEnv() faultPlan {
	p := faultPlan{
		name: "short", kills: 10, killGapMin: 1500 * time.Millisecond, killGapMax: 4 * time.Second,
		holderLifeMin: time.Second, holderLifeMax: 5 * time.Second, sendPauseMax: 40 * time.Millisecond,
		progressPerKill: 20, senders: 20, targets: 5,
	}
	if os.Getenv("FAULT_LONG") != "" && os.Getenv("FAULT_SHORT") == "" {
		p.name, p.kills = "long", 60
		p.killGapMin, p.killGapMax = time.Second, 8*time.Second
		p.sendPauseMax = 20 * time.Millisecond
		p.progressPerKill = 50
	}
	return p
}

type faultKey struct{ sender, seq, target int }

func faultText(k faultKey) string { return fmt.Sprintf("s%02d-%07d-r%d", k.sender, k.seq, k.target) }

func faultParse(s string) (faultKey, bool) {
	var k faultKey
	n, err := fmt.Sscanf(s, "s%02d-%07d-r%d", &k.sender, &k.seq, &k.target)
	return k, err == nil && n == 3 && faultText(k) == s
}

// faultChecker records every accepted and every delivered message and the
// violations of the guarantees it sees as they happen.
type faultChecker struct {
	senders, targets int

	faultLedger
	accepted    map[string]faultKey // message id → key, Send returned nil
	acceptedIDs map[faultKey]string
	deliveries  map[string]int // message id → times handed to a holder
	lastFirst   [][]int        // [target][sender] seq of the latest first delivery
	redelivered int            // deliveries again of messages whose ack was not confirmed
	duplicates  int            // sends answered "duplicate": a retry of one stored before a kill
	ackFailed   int            // acks that failed when first sent (the session retries them)
}

// faultLedger is what every crash checker keeps: a lock, the message ids
// whose ack was confirmed to their holder, and the violations seen.
type faultLedger struct {
	mu         sync.Mutex
	ackOK      map[string]bool // message id → an ack of it was confirmed
	violations []string
}

// violate records a broken guarantee (c.mu held).
func (c *faultLedger) violate(format string, args ...any) {
	if len(c.violations) < 50 {
		c.violations = append(c.violations, fmt.Sprintf(format, args...))
	}
}

// acked records acks confirmed to their holder.
func (c *faultLedger) acked(ids []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		c.ackOK[id] = true
	}
}

func newFaultChecker(senders, targets int) *faultChecker {
	c := &faultChecker{
		senders: senders, targets: targets,
		accepted: map[string]faultKey{}, acceptedIDs: map[faultKey]string{},
		deliveries: map[string]int{}, faultLedger: faultLedger{ackOK: map[string]bool{}},
	}
	c.lastFirst = make([][]int, targets)
	for r := range c.lastFirst {
		c.lastFirst[r] = make([]int, senders)
		for k := range c.lastFirst[r] {
			c.lastFirst[r][k] = -1
		}
	}
	return c
}

func (c *faultChecker) accept(id string, k faultKey, duplicate bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.accepted[id]; ok && prev != k {
		c.violate("message id %s accepted for %s and for %s", id, faultText(prev), faultText(k))
	}
	if prev, ok := c.acceptedIDs[k]; ok && prev != id {
		c.violate("%s accepted twice, as %s and as %s", faultText(k), prev, id)
	}
	c.accepted[id] = k
	c.acceptedIDs[k] = id
	if duplicate {
		c.duplicates++
	}
}

func (c *faultChecker) acceptedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.accepted)
}

// delivered records that holder of target r got m; shown is what this
// holder (one Session, i.e. one holder process) was handed before. Each
// target has one holder goroutine at a time, so the events of one message
// are ordered.
func (c *faultChecker) delivered(r int, m wire.Message, shown map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if shown[m.ID] {
		c.violate("target %d: %s (%s) shown twice by the same holder", r, m.ID, m.Text)
	}
	shown[m.ID] = true
	k, ok := faultParse(m.Text)
	if !ok || k.sender >= c.senders || k.target != r {
		c.violate("target %d got an unexpected message %s %q", r, m.ID, m.Text)
		return
	}
	if id, ok := c.acceptedIDs[k]; ok && id != m.ID {
		c.violate("%s delivered as %s but accepted as %s", m.Text, m.ID, id)
	}
	if c.ackOK[m.ID] {
		c.violate("%s (%s) delivered again after its ack was confirmed", m.ID, m.Text)
	}
	c.deliveries[m.ID]++
	if c.deliveries[m.ID] > 1 {
		c.redelivered++
		return
	}
	if last := c.lastFirst[r][k.sender]; k.seq <= last {
		c.violate("target %d: sender %d's message %d first delivered after its message %d (order)", r, k.sender, k.seq, last)
	}
	c.lastFirst[r][k.sender] = k.seq
}

// missing lists accepted messages that no holder has got yet.
func (c *faultChecker) missing() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for id, k := range c.accepted {
		if c.deliveries[id] == 0 {
			out = append(out, fmt.Sprintf("%s (%s, delivered %d times)", id, faultText(k), c.deliveries[id]))
		}
	}
	sort.Strings(out)
	return out
}

// unconfirmed lists accepted messages delivered but whose ack was never
// confirmed to the holder (the broker died or the holder was killed after
// the ack was committed but before its reply arrived).
func (c *faultChecker) unconfirmed() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for id := range c.accepted {
		if !c.ackOK[id] {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// faultConnect connects an in-process client (auto-spawning the broker).
func faultConnect(ctx context.Context, h *H, name string) (*intercom.Client, error) {
	cctx, cancel := context.WithTimeout(ctx, msgWait)
	defer cancel()
	return intercom.Connect(cctx, intercom.Options{
		Home: h.Home, Socket: h.Layout.Socket,
		BrokerCommand: filepath.Join(binDir, "intercom-broker"), Name: name,
	})
}

// faultKill SIGKILLs every broker of h and waits (bounded) until they are gone.
func faultKill(h *H) (int, error) {
	pids := h.BrokerPids()
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				return 0, fmt.Errorf("broker %d still alive 10 s after SIGKILL", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return len(pids), nil
}

// TestFaultCrashConsistency: 20 senders stream messages to 5 recipients held
// by in-process holders while the broker is kill -9'd at random moments and
// holders are killed (connection dropped, no ack, no unregister) and resumed
// at random. Every accepted message is delivered; none is delivered again
// once its ack was confirmed; each sender's messages reach each recipient in
// order (first deliveries).
func TestFaultCrashConsistency(t *testing.T) {
	plan := faultPlanFromEnv()
	h := newMsgH(t)
	h.WriteConfig(`{"idleExitMs": 30000}`) // a stray broker (spawned during cleanup) exits by itself

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var clientsMu sync.Mutex
	var clients []*intercom.Client
	track := func(c *intercom.Client) {
		clientsMu.Lock()
		clients = append(clients, c)
		clientsMu.Unlock()
	}
	// Registered after newH, so it runs before the harness kills the broker:
	// no goroutine or client is left to respawn one.
	t.Cleanup(func() {
		cancel()
		AwaitGroup(t, &wg, 2*time.Minute, "the load goroutines to stop")
		clientsMu.Lock()
		for _, c := range clients {
			c.Close()
		}
		clientsMu.Unlock()
	})

	setup, setupCancel := context.WithTimeout(ctx, msgWait)
	defer setupCancel()
	admin, err := faultConnect(ctx, h, "fault-admin")
	if err != nil {
		t.Fatal(err)
	}
	track(admin)

	// The recipients: durable sessions, detached until their holders start.
	targetIDs := make([]string, plan.targets)
	for r := range targetIDs {
		s, err := admin.Attach(setup, intercom.AttachOptions{Name: fmt.Sprintf("rcv-%d", r), Cwd: h.Cwd})
		if err != nil {
			t.Fatal(err)
		}
		targetIDs[r] = s.ID()
		if err := s.Detach(setup); err != nil {
			t.Fatal(err)
		}
	}
	// The senders: durable, non-receiving sessions, five per client.
	type sender struct {
		c  *intercom.Client
		id string
	}
	senders := make([]sender, plan.senders)
	var sc *intercom.Client
	for k := range senders {
		if k%5 == 0 {
			if sc, err = faultConnect(ctx, h, fmt.Sprintf("fault-senders-%d", k/5)); err != nil {
				t.Fatal(err)
			}
			track(sc)
		}
		s, err := sc.Attach(setup, intercom.AttachOptions{Name: fmt.Sprintf("src-%02d", k), Cwd: h.Cwd, NoDeliver: true})
		if err != nil {
			t.Fatal(err)
		}
		senders[k] = sender{sc, s.ID()}
	}

	chk := newFaultChecker(plan.senders, plan.targets)
	nonce := fmt.Sprintf("%x", rand.Uint64())
	var chaos atomic.Bool // holders are killed at random while set
	chaos.Store(true)
	quiet := make(chan struct{}) // closed with chaos: living holders stop dying
	// The last kill lands between show and ack: armed, the first holder to
	// be handed a batch hands the kill loop a channel and acks only once the
	// loop has frozen the broker (SIGSTOP) and closed it.
	var finalArmed atomic.Bool
	finalShow := make(chan chan struct{}, 1)
	var stopSend atomic.Bool
	var holderKills, holderStarts atomic.Int64
	errs := make(chan error, plan.senders+plan.targets)

	// Holders: one goroutine per recipient, one holder (client + resumed
	// session) at a time. A holder acks what it got once; an ack that fails
	// is the session's to retry (pkg/intercom keeps it until confirmed).
	for r := range targetIDs {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for ctx.Err() == nil {
				c, err := faultConnect(ctx, h, fmt.Sprintf("fault-holder-%d", r))
				if err != nil {
					continue // the broker is being killed; try again (ctx bounds this)
				}
				track(c)
				actx, acancel := context.WithTimeout(ctx, msgWait)
				s, err := c.Attach(actx, intercom.AttachOptions{ResumeID: targetIDs[r], Cwd: h.Cwd})
				acancel()
				if err != nil {
					c.Close()
					continue
				}
				holderStarts.Add(1)
				shown := map[string]bool{} // what this holder was handed
				var life <-chan time.Time
				if chaos.Load() {
					d := plan.holderLifeMin + rand.N(plan.holderLifeMax-plan.holderLifeMin)
					life = time.After(d)
				}
			hold:
				for {
					select {
					case <-quiet: // chaos is over: this holder lives on
						life = nil
					default:
					}
					var batch []wire.Message
					select {
					case m := <-s.Messages():
						batch = append(batch, m)
					more:
						for len(batch) < 200 {
							select {
							case m := <-s.Messages():
								batch = append(batch, m)
							default:
								break more
							}
						}
					case <-life:
						holderKills.Add(1)
						break hold
					case <-ctx.Done():
						break hold
					}
					ids := make([]string, len(batch))
					for i, m := range batch {
						chk.delivered(r, m, shown)
						ids[i] = m.ID
					}
					if finalArmed.CompareAndSwap(true, false) {
						frozen := make(chan struct{})
						finalShow <- frozen
						select {
						case <-frozen:
						case <-ctx.Done():
						}
					}
					ackCtx, ackCancel := context.WithTimeout(ctx, 3*time.Second)
					err := s.Ack(ackCtx, ids...)
					ackCancel()
					if err == nil {
						chk.acked(ids)
					} else {
						chk.mu.Lock()
						chk.ackFailed++
						chk.mu.Unlock()
					}
				}
				c.Close() // like a crash: no unregister, unconfirmed acks lost
			}
		}(r)
	}

	// Senders: each streams its numbered messages to random recipients. A
	// message is retried with the same ClientMsgID until accepted, so it is
	// stored at most once and the next one is sent only after it.
	var sendWG sync.WaitGroup
	for k := range senders {
		wg.Add(1)
		sendWG.Add(1)
		go func(k int) {
			defer wg.Done()
			defer sendWG.Done()
			for i := 0; !stopSend.Load() && ctx.Err() == nil; i++ {
				key := faultKey{k, i, rand.N(plan.targets)}
				req := wire.SendRequest{From: senders[k].id, To: targetIDs[key.target], Text: faultText(key),
					ClientMsgID: fmt.Sprintf("%s-%d-%d", nonce, k, i)}
				deadline := time.Now().Add(90 * time.Second)
				for {
					sctx, scancel := context.WithTimeout(ctx, 3*time.Second) // a request the killed broker got is never answered
					res, err := senders[k].c.Send(sctx, req)
					scancel()
					if err == nil {
						chk.accept(res.ID, key, res.Duplicate)
						break
					}
					if ctx.Err() != nil {
						return
					}
					if time.Now().After(deadline) {
						errs <- fmt.Errorf("sender %d: message %d not accepted within 90 s: %v", k, i, err)
						return
					}
					time.Sleep(50 * time.Millisecond) // retry pause
				}
				if plan.sendPauseMax > 0 {
					time.Sleep(rand.N(plan.sendPauseMax)) // load schedule
				}
			}
		}(k)
	}

	// The fault schedule: kill -9 the broker at random moments, each time
	// after the system made progress since the previous kill.
	start := time.Now()
	kills, last, finalFailed := 0, 0, 0
	for kills < plan.kills {
		time.Sleep(plan.killGapMin + rand.N(plan.killGapMax-plan.killGapMin)) // fault schedule
		Eventually(t, 90*time.Second, func() bool {
			return chk.acceptedCount() >= last+plan.progressPerKill && len(h.BrokerPids()) > 0
		}, "progress (%d accepted sends) and a running broker before kill %d", plan.progressPerKill, kills+1)
		if kills == plan.kills-1 {
			finalFailed = freezeBetweenShowAndAck(t, h, chk, &chaos, quiet, &finalArmed, finalShow)
		}
		n, err := faultKill(h)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			kills++
		}
		last = chk.acceptedCount()
		t.Logf("kill %d at %s: %d accepted", kills, time.Since(start).Round(100*time.Millisecond), last)
	}
	stopSend.Store(true)
	faultLoad := time.Since(start)

	// Final drain: senders finish their message in flight (each send loop is
	// bounded by its 90 s deadline); holders, no longer killed, take
	// everything; every accepted message is acked and nothing stays stored.
	sendersDone := make(chan struct{})
	go func() { sendWG.Wait(); close(sendersDone) }()
	select {
	case <-sendersDone:
	case <-time.After(2 * time.Minute):
		t.Fatal("senders did not stop within 2 minutes")
	}
	Eventually(t, 3*time.Minute, func() bool { return len(chk.missing()) == 0 },
		"every accepted message to be delivered; missing: %v", lazyMissing{chk})
	// After quiet no shown message is still queued: every holder's acks,
	// failed ones included, reach the broker without a new holder.
	var queued []string
	Eventually(t, msgWait, func() bool {
		queued = queued[:0]
		for _, id := range targetIDs {
			ictx, icancel := context.WithTimeout(ctx, 5*time.Second)
			msgs, err := admin.Peek(ictx, id, 0)
			icancel()
			if err != nil {
				return false
			}
			for _, m := range msgs {
				queued = append(queued, m.ID)
			}
		}
		return len(queued) == 0
	}, "every inbox to be empty (all shown messages acked); still queued: %v", &queued)
	// A message whose ack reply was lost was not redelivered: the broker
	// must have committed that ack (its trace says acked), else it is lost.
	unconf := chk.unconfirmed()
	for _, id := range unconf {
		tctx, tcancel := context.WithTimeout(ctx, 5*time.Second)
		tr, err := admin.Trace(tctx, id)
		tcancel()
		if err != nil || tr.State != "acked" {
			t.Errorf("message %s: delivered, ack unconfirmed, not redelivered, and its trace is %+v (%v), not acked", id, tr, err)
		}
	}
	cancel()
	AwaitGroup(t, &wg, 2*time.Minute, "the load goroutines to stop")
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	chk.mu.Lock()
	defer chk.mu.Unlock()
	for _, v := range chk.violations {
		t.Error(v)
	}
	// Every send loop ended with its message accepted, so a delivered
	// message that was never accepted is a phantom.
	for id := range chk.deliveries {
		if _, ok := chk.accepted[id]; !ok {
			t.Errorf("message %s delivered but never accepted", id)
		}
	}
	t.Logf("fault run (%s): %d accepted (%d answered duplicate on retry), %d delivered, %d redelivered after an unconfirmed ack, %d acks failed when sent (retried by the session; %d at the final freeze, by holders that lived on), %d with a lost ack reply (trace: acked), 0 lost, %d broker kills in %s, %d holder kills, %d holder starts",
		plan.name, len(chk.accepted), chk.duplicates, len(chk.deliveries), chk.redelivered, chk.ackFailed, finalFailed, len(unconf), kills, faultLoad.Round(time.Second), holderKills.Load(), holderStarts.Load())
	if kills < 10 {
		t.Errorf("only %d broker kills, want >= 10", kills)
	}
	if holderKills.Load() < int64(plan.targets) {
		t.Errorf("only %d holder kills, want at least %d", holderKills.Load(), plan.targets)
	}
	if len(chk.accepted) < plan.kills*plan.progressPerKill {
		t.Errorf("only %d messages accepted", len(chk.accepted))
	}
}

// freezeBetweenShowAndAck ends the chaos (living holders stay), then makes
// the coming kill land between show and ack: a holder handed a batch waits,
// the broker is frozen, the holder acks into it and fails. It returns how
// many acks failed meanwhile; the caller kills the frozen broker.
func freezeBetweenShowAndAck(t *testing.T, h *H, chk *faultChecker, chaos *atomic.Bool, quiet chan struct{}, armed *atomic.Bool, show chan chan struct{}) int {
	t.Helper()
	chaos.Store(false)
	close(quiet)
	armed.Store(true)
	var frozen chan struct{}
	select {
	case frozen = <-show:
	case <-time.After(90 * time.Second):
		t.Fatal("no holder was handed a message for the final kill")
	}
	before := chk.failedAcks()
	for _, pid := range h.BrokerPids() {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
		Eventually(t, msgWait, func() bool { return procState(pid) == 'T' || !alive(pid) }, "broker %d to stop", pid)
	}
	close(frozen)
	Eventually(t, msgWait, func() bool { return chk.failedAcks() > before }, "the held batch's ack to fail against the frozen broker")
	return chk.failedAcks() - before
}

func (c *faultChecker) failedAcks() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ackFailed
}

// lazyMissing prints at most 20 missing messages when formatted.
type lazyMissing struct{ c *faultChecker }

func (l lazyMissing) String() string {
	m := l.c.missing()
	if len(m) > 20 {
		return fmt.Sprintf("%d, first: %s", len(m), strings.Join(m[:20], ", "))
	}
	return fmt.Sprintf("%d: %s", len(m), strings.Join(m, ", "))
}

// TestFaultNextHolderGetsNoPushOfPrevious: pushes are addressed to one
// holder (its token), not to whoever listens on the session. A holder that
// subscribes before registering (every holder does, so no push is missed)
// while the broker still pushes to the previous holder used to receive those
// pushes ahead of the backlog its registration flushes: a newer message
// first, an older one after (the order violation of the long crash run).
func TestFaultNextHolderGetsNoPushOfPrevious(t *testing.T) {
	h := newMsgH(t)
	ctx, cancel := context.WithTimeout(context.Background(), msgWait)
	defer cancel()
	c, err := faultConnect(ctx, h, "holder-one")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	held, err := c.Attach(ctx, intercom.AttachOptions{Name: "held", Cwd: h.Cwd})
	if err != nil {
		t.Fatal(err)
	}
	src, err := c.Attach(ctx, intercom.AttachOptions{Name: "src", Cwd: h.Cwd, NoDeliver: true})
	if err != nil {
		t.Fatal(err)
	}
	// The next holder, subscribed with its own token, not yet registered.
	next := hostileConn(t, h, "next-holder", nil)
	sub, err := next.SubscribeSync(wire.Deliver(held.ID(), "nextholdertoken"))
	if err != nil {
		t.Fatal(err)
	}
	if err := next.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := c.Send(ctx, wire.SendRequest{From: src.ID(), To: held.ID(), Text: fmt.Sprintf("m%d", i)}); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-held.Messages():
			if m.Text != fmt.Sprintf("m%d", i) {
				t.Fatalf("holder got %q, want m%d", m.Text, i)
			}
			if err := held.Ack(ctx, m.ID); err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatalf("holder did not get m%d", i)
		}
	}
	// Every push is one server-side fan-out: had the next holder matched, the
	// message was queued to it before the holder above got it; a flush
	// round trip brings anything queued.
	if err := next.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := sub.Pending(); n != 0 {
		m, _ := sub.NextMsg(time.Second)
		t.Fatalf("the next holder received %d pushes meant for the current one (first: %s)", n, m.Data)
	}
	// A holder registration without a token is refused.
	cid, _ := next.GetClientID()
	req, _ := json.Marshal(wire.RegisterRequest{Name: "tokenless", Cwd: h.Cwd, Project: h.Cwd, ClientID: cid, Holder: true})
	rep, err := next.Request(wire.SubjRegister, req, msgWait)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rep.Data), "holder_token") {
		t.Fatalf("tokenless holder registration answered %s, want an error naming holder_token", rep.Data)
	}
}
