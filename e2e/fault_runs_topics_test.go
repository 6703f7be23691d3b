package e2e

// TestFaultCrashQuestionsAndTopics (issue 8: "Same for questions/answers of
// supervised runs and topic records"): the crash-consistency checker of
// TestFaultCrashConsistency applied to the two other durable workloads.
// The broker is kill -9'd at random moments while
//
//   - supervised children (real `agent-runs start` runs of a shell script)
//     ask their supervisor numbered questions with `intercom
//     contact-supervisor`, answered alternately by `agent-runs answer` and by
//     the supervisor's in-process reply to the ask, and
//   - in-process publishers stream numbered topic records (mostly updates,
//     every k-th a decision that wakes the subscribers), read back by a
//     poller and received by two held subscriber sessions.
//
// Clients respawn the broker by themselves. A checker asserts that nothing
// accepted is lost, nothing is applied twice and order holds. Short by
// default (part of `make test`); FAULT_LONG=1 (and FAULT_SHORT empty) runs
// the long variant.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// qtPlan is the shape of one run of TestFaultCrashQuestionsAndTopics.
type qtPlan struct {
	name           string
	kills          int           // broker kill -9s
	killGapMin     time.Duration // random pause before each kill
	killGapMax     time.Duration
	pubsPerKill    int // publications accepted between two kills, at least
	answersPerKill int // answers consumed by children between two kills, at least
	runs           int // supervised runs asking questions
	publishers     int
	subscribers    int
	decisionEvery  int           // every k-th publication of a publisher is a decision
	pubPauseMax    time.Duration // random pause between two publications of one publisher
}

func qtPlanFromEnv() qtPlan {
	p := qtPlan{
		name: "short", kills: 6, killGapMin: 1500 * time.Millisecond, killGapMax: 3 * time.Second,
		pubsPerKill: 15, answersPerKill: 1, runs: 3, publishers: 4, subscribers: 2,
		decisionEvery: 3, pubPauseMax: 40 * time.Millisecond,
	}
	if os.Getenv("FAULT_LONG") != "" && os.Getenv("FAULT_SHORT") == "" {
		p.name, p.kills = "long", 30
		p.killGapMin, p.killGapMax = time.Second, 6*time.Second
		p.pubsPerKill, p.answersPerKill = 40, 2
	}
	return p
}

var qtTopics = [2]string{"fault/alpha", "fault/beta"}

// qtText is the message of publisher p's publication n on topic t.
func qtText(p, n, t int, event string) string {
	return fmt.Sprintf("qt-p%d-n%06d-t%d-%s", p, n, t, event)
}

type qtRec struct {
	p, n, t int
	event   string
}

func qtParse(s string) (qtRec, bool) {
	var r qtRec
	k, err := fmt.Sscanf(s, "qt-p%d-n%06d-t%d-%s", &r.p, &r.n, &r.t, &r.event)
	return r, err == nil && k == 4 && qtText(r.p, r.n, r.t, r.event) == s
}

// qtKey names one publication: publisher and number.
type qtKey struct{ p, n int }

// qtTopicChecker records every attempted and accepted publication, what the
// poller read and what each subscriber received, and the violations seen.
type qtTopicChecker struct {
	pubs, subs int

	faultLedger
	attempted   [][2]int             // [p][t] highest number whose publish was started
	lastAcc     [][2]int             // [p][t] highest number accepted
	accEvent    [][2]string          // [p][t] event of lastAcc
	accepted    int                  // publications accepted
	decisions   map[qtKey]int        // accepted decision → topic
	ambiguous   map[qtKey]int        // publication → attempts after a failure without a broker answer
	got         []map[qtKey][]string // [sub] decision → distinct message ids received
	deliveries  int
	lastFirst   [][]int  // [sub][p] number of the latest first delivery
	read        [][2]int // [p][t] highest number the poller read
	polls       int      // successful Topics reads during the chaos
	regressions []string
	duplicates  int // retries answered duplicate (applied before, answer lost)
}

func newQTTopicChecker(pubs, subs int) *qtTopicChecker {
	c := &qtTopicChecker{
		pubs: pubs, subs: subs,
		attempted: make([][2]int, pubs), lastAcc: make([][2]int, pubs), accEvent: make([][2]string, pubs),
		decisions: map[qtKey]int{}, ambiguous: map[qtKey]int{}, faultLedger: faultLedger{ackOK: map[string]bool{}}, read: make([][2]int, pubs),
	}
	for range subs {
		c.got = append(c.got, map[qtKey][]string{})
		c.lastFirst = append(c.lastFirst, make([]int, pubs))
	}
	return c
}

func (c *qtTopicChecker) attempt(r qtRec) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.attempted[r.p][r.t] = r.n
}

// retried records that a publication is sent again after an attempt that
// got no answer from a broker (its commit may or may not have happened).
func (c *qtTopicChecker) retried(r qtRec) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ambiguous[qtKey{r.p, r.n}]++
}

func (c *qtTopicChecker) accept(r qtRec, res wire.PublishReply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if res.Stale {
		c.violate("publication %s answered stale (not applied)", qtText(r.p, r.n, r.t, r.event))
	}
	want := 0
	if r.event == wire.EventDecision {
		want = c.subs
		c.decisions[qtKey{r.p, r.n}] = r.t
	}
	if res.Duplicate { // a retry of one applied before its answer was lost
		c.duplicates++
		want = 0
	}
	if res.Woken != want {
		c.violate("publication %s woke %d subscribers, want %d", qtText(r.p, r.n, r.t, r.event), res.Woken, want)
	}
	c.lastAcc[r.p][r.t], c.accEvent[r.p][r.t] = r.n, r.event
	c.accepted++
}

func (c *qtTopicChecker) acceptedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.accepted
}

// observe checks one read of the topic records taken during the chaos.
func (c *qtTopicChecker) observe(infos []wire.TopicInfo, pubIDs []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.polls++
	seen := map[[2]int]bool{}
	for _, ti := range infos {
		for _, rec := range ti.Records {
			r, ok := qtParse(rec.Message)
			if !ok || r.p >= c.pubs || qtTopics[r.t] != ti.Topic || rec.From.ID != pubIDs[r.p] || rec.Event != r.event {
				c.violate("topics shows a foreign record %+v on %s", rec, ti.Topic)
				continue
			}
			k := [2]int{r.p, r.t}
			if seen[k] {
				c.violate("topics shows two records of publisher %d on %s", r.p, ti.Topic)
			}
			seen[k] = true
			if r.n > c.attempted[r.p][r.t] {
				c.violate("topics shows %s, never published", rec.Message)
			}
			if prev := c.read[r.p][r.t]; r.n < prev {
				if len(c.regressions) < 20 {
					c.regressions = append(c.regressions, fmt.Sprintf("publisher %d on %s: record %d read after record %d", r.p, ti.Topic, r.n, prev))
				}
			} else {
				c.read[r.p][r.t] = r.n
			}
		}
	}
}

// delivered records that subscriber s got m (one holder goroutine per
// subscriber, so the events of one subscriber are ordered).
func (c *qtTopicChecker) delivered(s int, m wire.Message, pubIDs []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deliveries++
	r, ok := qtParse(m.Text)
	if !ok || r.p >= c.pubs || m.From.ID != pubIDs[r.p] {
		c.violate("subscriber %d got an unexpected message %s %q", s, m.ID, m.Text)
		return
	}
	if m.Event != r.event || m.Topic != qtTopics[r.t] || r.event != wire.EventDecision {
		c.violate("subscriber %d got %s as a %q wake-up on %q (only decisions wake)", s, m.Text, m.Event, m.Topic)
		return
	}
	if c.ackOK[m.ID] {
		c.violate("subscriber %d: %s (%s) delivered again after its ack was confirmed", s, m.ID, m.Text)
	}
	k := qtKey{r.p, r.n}
	ids := c.got[s][k]
	for _, id := range ids {
		if id == m.ID {
			return // a redelivery of an unconfirmed ack: same id, allowed
		}
	}
	c.got[s][k] = append(ids, m.ID)
	if len(ids) > 0 { // a second message for one decision: applied twice
		c.violate("subscriber %d got decision %s twice (ids %s and %s); its publish was retried %d times after an unanswered attempt",
			s, m.Text, ids[0], m.ID, c.ambiguous[k])
		return
	}
	if last := c.lastFirst[s][r.p]; r.n <= last {
		c.violate("subscriber %d: publisher %d's decision %d first delivered after its decision %d (order)", s, r.p, r.n, last)
	}
	c.lastFirst[s][r.p] = r.n
}

// missing lists accepted decisions some subscriber has not received.
func (c *qtTopicChecker) missing() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k, t := range c.decisions {
		for s := range c.subs {
			if len(c.got[s][k]) == 0 {
				out = append(out, fmt.Sprintf("subscriber %d lacks %s", s, qtText(k.p, k.n, t, wire.EventDecision)))
			}
		}
	}
	sort.Strings(out)
	return out
}

// qtLazy formats its value only when printed (Eventually's message
// arguments are evaluated once, before waiting).
type qtLazy func() string

func (l qtLazy) String() string { return l() }

func qtList(m []string) string {
	if len(m) > 20 {
		return fmt.Sprintf("%d, first: %s", len(m), strings.Join(m[:20], "; "))
	}
	return fmt.Sprintf("%d: %s", len(m), strings.Join(m, "; "))
}

// qtChild asks numbered questions until an answer ends in "-last": the test
// answers so only once the chaos is over, so every kill lands while every
// child is asking (a fixed count could run out before the kills). A failed
// contact-supervisor (exit != 0) is printed and retried with the same
// number: the checker then proves that the failed attempt saved no question
// (a duplicate would show as a second question file for that number).
const qtChild = `
i=1; fails=0
while :; do
  r=$(intercom contact-supervisor --reason need_decision -m "q$i"); rc=$?
  echo "q$i: $r (exit $rc)"
  if [ $rc -ne 0 ]; then
    fails=$((fails+1))
    [ $fails -lt 20 ] || exit 3
    sleep 0.2
    continue
  fi
  case "$r" in *-last) exit 0;; esac
  i=$((i+1))
done
`

var qtLine = regexp.MustCompile(`^q(\d+): (.*) \(exit (\d+)\)$`)

// qtAnswer is the test's answer to question i, decided once.
func qtAnswer(i int, last bool) string {
	if last {
		return fmt.Sprintf("a-%d-last", i)
	}
	return fmt.Sprintf("a-%d", i)
}

// qtRunsCLI runs agent-runs with args under ctx (bounded), returning its
// output and exit code (-1: did not run to an exit).
func qtRunsCLI(ctx context.Context, h *H, args ...string) (string, string, int) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c := h.cmd(cctx, "agent-runs", args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if err != nil {
		code = -1
		var ee interface{ ExitCode() int }
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
	}
	return out.String(), errb.String(), code
}

// TestFaultCrashQuestionsAndTopics: supervised-run questions and topic
// records under random kill -9 of the broker. Every question is saved once,
// answered once with its own answer and consumed once, in order, by its
// child; every run completes; every topic shows each publisher's last
// accepted record and no read ever goes back; every accepted decision
// reaches every subscriber once, in per-publisher order; updates wake
// nobody.
func TestFaultCrashQuestionsAndTopics(t *testing.T) {
	plan := qtPlanFromEnv()
	h := rsH(t) // kills every process of the home (owners, children, brokers) at cleanup
	h.WriteConfig(`{"idleExitMs": 30000}`)
	t.Cleanup(func() {
		if data, err := os.ReadFile(h.Layout.BrokerLog()); err == nil && strings.Contains(string(data), "DATA RACE") {
			t.Errorf("a broker reported a data race:\n%s", tail(string(data), 200))
		}
	})

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var clientsMu sync.Mutex
	var clients []*intercom.Client
	track := func(c *intercom.Client) {
		clientsMu.Lock()
		clients = append(clients, c)
		clientsMu.Unlock()
	}
	// Registered after rsH: runs first, so no goroutine or client of the test
	// respawns a broker while the home's processes are killed.
	t.Cleanup(func() {
		cancel()
		AwaitGroup(t, &wg, 2*time.Minute, "the load goroutines to stop")
		clientsMu.Lock()
		for _, c := range clients {
			c.Close()
		}
		clientsMu.Unlock()
	})
	connect := func(name string) *intercom.Client {
		t.Helper()
		c, err := faultConnect(ctx, h, name)
		if err != nil {
			t.Fatal(err)
		}
		track(c)
		return c
	}
	setup, setupCancel := context.WithTimeout(ctx, msgWait)
	defer setupCancel()
	attach := func(c *intercom.Client, o intercom.AttachOptions) *intercom.Session {
		t.Helper()
		o.Cwd = h.Cwd
		s, err := c.Attach(setup, o)
		if err != nil {
			t.Fatalf("attach %s: %v", o.Name, err)
		}
		return s
	}
	errs := make(chan error, 100)
	report := func(format string, args ...any) {
		select {
		case errs <- fmt.Errorf(format, args...):
		default:
		}
	}

	// --- the sessions -------------------------------------------------------

	admin := connect("qt-admin")
	supC := connect("qt-supervisor")
	sup := attach(supC, intercom.AttachOptions{Name: "sup"})
	pubIDs := make([]string, plan.publishers)
	pubCs := make([]*intercom.Client, plan.publishers)
	for p := range pubIDs {
		pubCs[p] = connect(fmt.Sprintf("qt-publisher-%d", p))
		pubIDs[p] = attach(pubCs[p], intercom.AttachOptions{Name: fmt.Sprintf("pub-%d", p), NoDeliver: true}).ID()
	}
	subSess := make([]*intercom.Session, plan.subscribers)
	for s := range subSess {
		c := connect(fmt.Sprintf("qt-subscriber-%d", s))
		subSess[s] = attach(c, intercom.AttachOptions{Name: fmt.Sprintf("sub-%d", s)})
		for _, topic := range qtTopics {
			if _, err := c.Subscribe(setup, subSess[s].ID(), topic, false); err != nil {
				t.Fatalf("subscribe sub-%d to %s: %v", s, topic, err)
			}
		}
	}

	// --- the supervisor's holder: acks every message, remembers asks and
	// completion notices -----------------------------------------------------

	var supMu sync.Mutex
	supAsks := map[string]int{}                // ask message id → deliveries
	supNotices := map[string]map[string]bool{} // run id → completion notice ids
	runRe := regexp.MustCompile(`(?m)^Run: ([0-9a-f]{8})$`)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			batch, ok := nextBatch(ctx, sup.Messages(), 100)
			if !ok {
				return
			}
			ids := make([]string, len(batch))
			supMu.Lock()
			for i, m := range batch {
				ids[i] = m.ID
				switch {
				case m.ExpectsReply && strings.HasPrefix(m.Text, "Subagent needs a supervisor decision."):
					supAsks[m.ID]++
				case strings.HasPrefix(m.Text, "Subagent run finished."):
					if mm := runRe.FindStringSubmatch(m.Text); mm != nil {
						if supNotices[mm[1]] == nil {
							supNotices[mm[1]] = map[string]bool{}
						}
						supNotices[mm[1]][m.ID] = true
					}
				default:
					report("the supervisor got an unexpected message %s: %q", m.ID, m.Text)
				}
			}
			supMu.Unlock()
			for ctx.Err() == nil {
				actx, acancel := context.WithTimeout(ctx, 3*time.Second)
				err := sup.Ack(actx, ids...)
				acancel()
				if err == nil {
					break
				}
				time.Sleep(50 * time.Millisecond) // retry pause
			}
		}
	}()

	// --- the supervised runs --------------------------------------------------

	script := rsScript(t, h.Cwd, "child.sh", qtChild)
	runIDs := make([]string, plan.runs)
	for r := range runIDs {
		runIDs[r] = rsStart(t, h, h.Cwd, "sup", "--agent", "w", "--index", strconv.Itoa(r), "--", "/bin/sh", script)
	}
	st := rsStore(h)

	// The answerer: polls the question files; answers each question once its
	// ask id is recorded, odd numbers with `agent-runs answer`, even ones
	// with the supervisor's in-process reply to the ask; retries a failed
	// answer with the same text until it is accepted.
	var stopAsking atomic.Bool // set once the chaos is over: the next answers end the runs
	var consumed atomic.Int64  // questions consumed by their child (state answered)
	var ansMu sync.Mutex
	answerOf := map[string]string{} // run/qid → the answer given
	var cliAnswers, replyAnswers, answerRetries atomic.Int64
	answer := func(q *runs.Question, i int, text string) {
		defer wg.Done()
		deadline := time.Now().Add(90 * time.Second)
		for attempt := 0; ctx.Err() == nil; attempt++ {
			if attempt > 0 {
				answerRetries.Add(1)
				time.Sleep(100 * time.Millisecond) // retry pause
			}
			if time.Now().After(deadline) {
				report("run %s question %s (q%d): answer %q not accepted within 90 s", q.RunID, q.ID, i, text)
				return
			}
			if i%2 == 1 {
				out, serr, code := qtRunsCLI(ctx, h, "--json", "answer", q.RunID, "--question-id", q.ID, text)
				if code == 0 {
					cliAnswers.Add(1)
					return
				}
				if strings.Contains(serr, "conflicting") {
					report("run %s question %s: answer %q refused as conflicting: %s %s", q.RunID, q.ID, text, out, serr)
					return
				}
				continue
			}
			sctx, scancel := context.WithTimeout(ctx, 3*time.Second)
			_, err := supC.Send(sctx, wire.SendRequest{From: sup.ID(), To: q.ChildSession, Text: text, ReplyTo: q.AskID,
				ClientMsgID: "qt-reply-" + q.RunID + "-" + q.ID})
			scancel()
			if err == nil {
				replyAnswers.Add(1)
				return
			}
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			n := 0
			for _, run := range runIDs {
				qs, _ := st.Questions(run)
				for _, q := range qs {
					if q.State == runs.QAnswered {
						n++
					}
					var i int
					if _, err := fmt.Sscanf(q.Message, "q%d", &i); err != nil || q.State != runs.QAwaiting || q.AskID == "" {
						continue
					}
					key := run + "/" + q.ID
					ansMu.Lock()
					_, started := answerOf[key]
					text := qtAnswer(i, stopAsking.Load())
					if !started {
						answerOf[key] = text
					}
					ansMu.Unlock()
					if !started {
						wg.Add(1)
						go answer(q, i, text)
					}
				}
			}
			consumed.Store(int64(n))
			time.Sleep(100 * time.Millisecond) // poll interval
		}
	}()

	// --- the topic workload ---------------------------------------------------

	chk := newQTTopicChecker(plan.publishers, plan.subscribers)
	for s, sess := range subSess {
		wg.Add(1)
		go func(s int, sess *intercom.Session) {
			defer wg.Done()
			for {
				batch, ok := nextBatch(ctx, sess.Messages(), 200)
				if !ok {
					return
				}
				ids := make([]string, len(batch))
				for i, m := range batch {
					chk.delivered(s, m, pubIDs)
					ids[i] = m.ID
				}
				for ctx.Err() == nil {
					actx, acancel := context.WithTimeout(ctx, 3*time.Second)
					err := sess.Ack(actx, ids...)
					acancel()
					if err == nil {
						chk.acked(ids)
						break
					}
					time.Sleep(50 * time.Millisecond) // retry pause
				}
			}
		}(s, sess)
	}

	var stopPub, stopRead atomic.Bool
	var pubRetries atomic.Int64
	nonce := fmt.Sprintf("%x", rand.Uint64()) // client ids: unique per run, the same on a retry
	var pubWG sync.WaitGroup
	for p := range plan.publishers {
		wg.Add(1)
		pubWG.Add(1)
		go func(p int) {
			defer wg.Done()
			defer pubWG.Done()
			for n := 1; !stopPub.Load() && ctx.Err() == nil; n++ {
				r := qtRec{p: p, n: n, t: rand.N(len(qtTopics)), event: wire.EventUpdate}
				if n%plan.decisionEvery == 0 {
					r.event = wire.EventDecision
				}
				req := wire.PublishRequest{From: pubIDs[p], Topic: qtTopics[r.t], Event: r.event, Message: qtText(p, n, r.t, r.event),
					ClientMsgID: fmt.Sprintf("%s-%d-%d", nonce, p, n)} // the same on every retry
				chk.attempt(r)
				deadline := time.Now().Add(90 * time.Second)
				for {
					pctx, pcancel := context.WithTimeout(ctx, 3*time.Second) // a request the killed broker got is never answered
					res, err := pubCs[p].Publish(pctx, req)
					pcancel()
					if err == nil {
						chk.accept(r, res)
						break
					}
					if ctx.Err() != nil {
						return
					}
					if time.Now().After(deadline) {
						report("publisher %d: publication %d not accepted within 90 s: %v", p, n, err)
						return
					}
					pubRetries.Add(1)
					var werr *wire.Error
					if !errors.As(err, &werr) { // no broker answer: the commit may have happened
						chk.retried(r)
					}
					time.Sleep(50 * time.Millisecond) // retry pause
				}
				time.Sleep(rand.N(plan.pubPauseMax)) // load schedule
			}
		}(p)
	}
	wg.Add(1)
	go func() { // the reader: record numbers never go back
		defer wg.Done()
		for !stopRead.Load() && ctx.Err() == nil {
			rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
			infos, err := admin.Topics(rctx, "")
			rcancel()
			if err == nil {
				chk.observe(infos, pubIDs)
			}
			time.Sleep(50 * time.Millisecond) // poll interval
		}
	}()

	// --- the fault schedule ---------------------------------------------------

	start := time.Now()
	kills, lastPubs, lastAnswers := 0, 0, int64(0)
	for kills < plan.kills {
		time.Sleep(plan.killGapMin + rand.N(plan.killGapMax-plan.killGapMin)) // fault schedule
		Eventually(t, 90*time.Second, func() bool {
			return chk.acceptedCount() >= lastPubs+plan.pubsPerKill && consumed.Load() >= lastAnswers+int64(plan.answersPerKill) &&
				len(h.BrokerPids()) > 0
		}, "progress (%d publications, %d consumed answers) and a running broker before kill %d; have %d publications, %d answers",
			plan.pubsPerKill, plan.answersPerKill, kills+1, qtLazy(func() string { return strconv.Itoa(chk.acceptedCount() - lastPubs) }),
			qtLazy(func() string { return strconv.FormatInt(consumed.Load()-lastAnswers, 10) }))
		n, err := faultKill(h)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			kills++
		}
		lastPubs, lastAnswers = chk.acceptedCount(), consumed.Load()
		t.Logf("kill %d at %s: %d publications accepted, %d answers consumed", kills, time.Since(start).Round(100*time.Millisecond), lastPubs, lastAnswers)
	}
	chaos := time.Since(start)
	stopAsking.Store(true)
	stopPub.Store(true)
	stopRead.Store(true)

	// --- drain ------------------------------------------------------------------

	pubsDone := make(chan struct{})
	go func() { pubWG.Wait(); close(pubsDone) }()
	select {
	case <-pubsDone:
	case <-time.After(2 * time.Minute):
		t.Fatal("publishers did not stop within 2 minutes")
	}
	for _, id := range runIDs {
		Eventually(t, 2*time.Minute, func() bool {
			r, err := st.Load(id)
			return err == nil && r.Finished()
		}, "run %s to finish (output so far:\n%s)", id, qtLazy(func() string { return tail(rsOutput(h, id), 15) }))
	}
	Eventually(t, time.Minute, func() bool { return len(chk.missing()) == 0 },
		"every accepted decision to reach every subscriber; missing: %v", qtLazy(func() string { return qtList(chk.missing()) }))
	Eventually(t, msgWait, func() bool {
		supMu.Lock()
		defer supMu.Unlock()
		return len(supNotices) == len(runIDs)
	}, "a completion notice of every run at the supervisor")

	// --- verdict: questions -------------------------------------------------------

	questions, failedAttempts := 0, 0
	failReasons := map[string]int{} // other output lines (the failed attempts' stderr), without run ids
	runIDRe := regexp.MustCompile(`[0-9a-f]{8,}`)
	for _, id := range runIDs {
		r, err := st.Load(id)
		if err != nil {
			t.Fatal(err)
		}
		out := rsOutput(h, id)
		if r.State != runs.StateCompleted || r.ExitCode == nil || *r.ExitCode != 0 || r.RevivedTo != "" {
			t.Errorf("run %s ended %s (exit %v, revived to %q), want completed with exit 0 in place; output:\n%s", id, r.State, r.ExitCode, r.RevivedTo, tail(out, 30))
			continue
		}
		qs, err := st.Questions(id)
		if err != nil {
			t.Fatal(err)
		}
		byNum := map[int][]*runs.Question{}
		maxNum := 0
		for _, q := range qs {
			var i int
			if _, err := fmt.Sscanf(q.Message, "q%d", &i); err != nil || q.Message != fmt.Sprintf("q%d", i) {
				t.Errorf("run %s: unexpected question %s %q", id, q.ID, q.Message)
				continue
			}
			byNum[i] = append(byNum[i], q)
			maxNum = max(maxNum, i)
		}
		questions += len(qs)
		// The child's lines: failed attempts (retried) and one success per
		// number, in order, each with its own answer.
		var okLines []string
		want := 1
		for _, line := range strings.Split(out, "\n") {
			m := qtLine.FindStringSubmatch(line)
			if m == nil {
				if strings.TrimSpace(line) != "" {
					failReasons[runIDRe.ReplaceAllString(line, "…")]++
				}
				continue
			}
			i, _ := strconv.Atoi(m[1])
			if m[3] != "0" {
				// contact-supervisor waits for a restarting broker (up to a
				// minute) instead of failing: a child sees no error.
				failedAttempts++
				t.Errorf("run %s: contact-supervisor failed across a broker kill: %q", id, line)
				continue
			}
			okLines = append(okLines, line)
			if i != want {
				t.Errorf("run %s: answer line %q out of order, want q%d next", id, line, want)
			}
			want = i + 1
		}
		if len(okLines) != maxNum || len(byNum) != maxNum {
			t.Errorf("run %s: %d answered lines, %d question numbers, highest q%d; output:\n%s", id, len(okLines), len(byNum), maxNum, tail(out, 30))
		}
		for i := 1; i <= maxNum; i++ {
			list := byNum[i]
			if len(list) != 1 {
				ids := []string{}
				for _, q := range list {
					ids = append(ids, q.ID+" ("+q.State+")")
				}
				t.Errorf("run %s: question q%d saved %d times (%s), want once", id, i, len(list), strings.Join(ids, ", "))
				continue
			}
			q := list[0]
			ansMu.Lock()
			given, ok := answerOf[id+"/"+q.ID]
			ansMu.Unlock()
			if !ok || given != qtAnswer(i, i == maxNum) {
				t.Errorf("run %s: q%d (%s) was answered %q (%v), want %q", id, i, q.ID, given, ok, qtAnswer(i, i == maxNum))
			}
			a, err := st.LoadAnswer(id, q.ID)
			if err != nil || a.Message != given {
				t.Errorf("run %s: q%d (%s) saved answer %+v (%v), want %q", id, i, q.ID, a, err, given)
			}
			if q.State != runs.QAnswered || q.AskID == "" {
				t.Errorf("run %s: q%d (%s) state %s, ask id %q, want answered with an ask id", id, i, q.ID, q.State, q.AskID)
			}
			wantLine := fmt.Sprintf("q%d: Reply from supervisor: %s (exit 0)", i, given)
			if n := strings.Count(out, wantLine+"\n"); n != 1 {
				t.Errorf("run %s: the child printed %q %d times, want once; output:\n%s", id, wantLine, n, tail(out, 30))
			}
			supMu.Lock()
			if supAsks[q.AskID] == 0 {
				t.Errorf("run %s: q%d's ask %s never reached the supervisor", id, i, q.AskID)
			}
			supMu.Unlock()
		}
		if n := strings.Count(out, "Reply from supervisor"); n != maxNum {
			t.Errorf("run %s: the child printed %d replies for %d questions", id, n, maxNum)
		}
		supMu.Lock()
		if n := len(supNotices[id]); n != 1 {
			t.Errorf("run %s: %d completion notices reached the supervisor, want 1", id, n)
		}
		supMu.Unlock()
	}

	// --- verdict: topics ------------------------------------------------------------

	var final []wire.TopicInfo
	Eventually(t, msgWait, func() bool {
		fctx, fcancel := context.WithTimeout(ctx, 5*time.Second)
		defer fcancel()
		var err error
		final, err = admin.Topics(fctx, "")
		return err == nil
	}, "a final read of the topics")
	chk.mu.Lock()
	records := map[[2]int]wire.TopicRecord{}
	for _, ti := range final {
		subs := map[string]bool{}
		for _, s := range ti.Subscribers {
			subs[s.SessionID] = true
		}
		for _, s := range subSess {
			if !subs[s.ID()] {
				t.Errorf("topic %s lost subscriber %s", ti.Topic, s.ID())
			}
		}
		for _, rec := range ti.Records {
			r, ok := qtParse(rec.Message)
			if !ok || r.p >= plan.publishers || qtTopics[r.t] != ti.Topic {
				t.Errorf("topic %s: foreign record %+v", ti.Topic, rec)
				continue
			}
			if _, dup := records[[2]int{r.p, r.t}]; dup {
				t.Errorf("topic %s: two records of publisher %d", ti.Topic, r.p)
			}
			records[[2]int{r.p, r.t}] = rec
		}
	}
	for p := range plan.publishers {
		for tt := range qtTopics {
			n := chk.lastAcc[p][tt]
			rec, ok := records[[2]int{p, tt}]
			switch {
			case n == 0 && ok:
				t.Errorf("publisher %d on %s: record %q, but nothing was accepted there", p, qtTopics[tt], rec.Message)
			case n == 0:
			case !ok:
				t.Errorf("publisher %d on %s: no record, want %s (accepted)", p, qtTopics[tt], qtText(p, n, tt, chk.accEvent[p][tt]))
			case rec.Message != qtText(p, n, tt, chk.accEvent[p][tt]) || rec.Event != chk.accEvent[p][tt] || rec.From.ID != pubIDs[p]:
				t.Errorf("publisher %d on %s: record %q (%s), want the last accepted %s", p, qtTopics[tt], rec.Message, rec.Event, qtText(p, n, tt, chk.accEvent[p][tt]))
			}
		}
	}
	for _, v := range chk.violations {
		t.Error(v)
	}
	for _, v := range chk.regressions {
		t.Errorf("a topic record went back during the chaos: %s", v)
	}
	distinct, ambiguous := 0, 0
	for s := range chk.got {
		for range chk.got[s] {
			distinct++
		}
	}
	for range chk.ambiguous {
		ambiguous++
	}
	decisions, accepted, deliveries, polls := len(chk.decisions), chk.accepted, chk.deliveries, chk.polls
	chk.mu.Unlock()

	cancel()
	AwaitGroup(t, &wg, 2*time.Minute, "the load goroutines to stop")
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	supMu.Lock()
	askDeliveries := 0
	for _, n := range supAsks {
		askDeliveries += n
	}
	supMu.Unlock()
	t.Logf("fault run (%s): %d broker kills in %s; questions: %d runs, %d questions saved, %d answers (%d agent-runs answer, %d in-process replies, %d answer retries), %d failed contact-supervisor attempts retried, %d ask deliveries to the supervisor; topics: %d publications accepted (%d decisions; %d publish retries, %d after an unanswered attempt, %d answered duplicate), %d wake-ups received (%d distinct), %d topic reads during the chaos",
		plan.name, kills, chaos.Round(time.Second), len(runIDs), questions, cliAnswers.Load()+replyAnswers.Load(), cliAnswers.Load(), replyAnswers.Load(), answerRetries.Load(),
		failedAttempts, askDeliveries, accepted, decisions, pubRetries.Load(), ambiguous, chk.duplicates, deliveries, distinct, polls)
	for line, n := range failReasons {
		t.Logf("children's other output (%d×): %s", n, line)
	}
	if kills < plan.kills {
		t.Errorf("only %d broker kills, want %d", kills, plan.kills)
	}
}

// nextBatch waits for a message on ch and takes up to max-1 more that are
// already there; false when ctx ends first.
func nextBatch(ctx context.Context, ch <-chan wire.Message, max int) ([]wire.Message, bool) {
	select {
	case m := <-ch:
		batch := []wire.Message{m}
		for len(batch) < max {
			select {
			case m := <-ch:
				batch = append(batch, m)
			default:
				return batch, true
			}
		}
		return batch, true
	case <-ctx.Done():
		return nil, false
	}
}
