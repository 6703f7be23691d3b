package broker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/intercom-dev/intercom/internal/presence"
	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Bridged hosts. An intercom-bridge process reports each remote host's
// sessions; messages to "name@host" are stored durably in the local outbox
// (outbox/<host>/<seq>) and forwarded by the bridge, which settles each one
// with bridge.ack once the remote broker has stored it. Remote senders and
// sessions are known here by pseudo ids "<id>@<host>", and their messages by
// "<id>@<host>" too, so that no remote id can ever name a local message or
// ask.
//
// Everything a bridged host sends is remote input: the handlers in
// bridge_deliver.go, bridge_topics.go and here check it with the validators
// that check local input, and the ledger's quotas bound what it may store.

// remoteWaitFor is how long a send to a remote target waits for the remote
// broker's acceptance before it is reported as queued.
const remoteWaitFor = 5 * time.Second

// remoteStaleAfter: a bridge reports its hosts every second. A host not
// reported for this long is treated as down, as when the bridge process died
// without a word.
const remoteStaleAfter = 10 * time.Second

// remoteForgetAfter: the sessions of a host whose link has been down this
// long are no longer listed (the host stays known: its outbox, `intercom-bridge
// status`, purge). Until then a cut host's sessions are listed unreachable,
// and a session is gone only when its host says so.
const remoteForgetAfter = 7 * 24 * time.Hour

// bridgeReportFresh: a bridge whose last state report is older is shown as
// not running by `intercom-bridge status`.
const bridgeReportFresh = 5 * time.Second

type remoteHost struct {
	host     string
	linkUp   bool
	sessions []wire.Session // as the remote broker reports them, validated
	updated  time.Time
	lastUp   time.Time  // the last report with the link up
	stale    *taskTimer // fires when no report has come for remoteStaleAfter
	lastErr  string     // the bridge's last trouble with this host
}

// up reports whether the link to the host is up, per a recent report.
func (r *remoteHost) up() bool { return r.linkUp && time.Since(r.updated) < remoteStaleAfter }

// shown is session s of the host as presence shows it: over a link that is
// down, a connected session is unreachable and none accepts asks.
func (r *remoteHost) shown(s wire.Session) wire.Session {
	if !r.up() {
		if s.Connected {
			s.State = wire.StateUnreachable
		}
		s.Connected, s.AcceptsAsks = false, false
	}
	return s
}

// wakeSlot is where a topic wake-up is stored: the subscriber's inbox, or
// the outbox of a remote subscriber's host.
func wakeSlot(m wire.Message) store.Slot {
	if _, host, remote := wire.SplitRemote(m.To); remote {
		return store.OutboxSlot(host, m.Seq)
	}
	return store.InboxSlot(m.To, m.Seq)
}

// limitsOf fills the limits a bridge sent with the defaults.
func limitsOf(l *wire.BridgeLimits) wire.BridgeLimits {
	d := wire.DefaultBridgeLimits()
	if l == nil {
		return d
	}
	out := *l
	out.MsgsPerSec = cmp.Or(out.MsgsPerSec, d.MsgsPerSec)
	out.BytesPerSec = cmp.Or(out.BytesPerSec, d.BytesPerSec)
	out.InboxMessages = cmp.Or(out.InboxMessages, d.InboxMessages)
	out.InboxBytes = cmp.Or(out.InboxBytes, d.InboxBytes)
	out.TopicRecords = cmp.Or(out.TopicRecords, d.TopicRecords)
	out.TopicBytes = cmp.Or(out.TopicBytes, d.TopicBytes)
	out.Subscriptions = cmp.Or(out.Subscriptions, d.Subscriptions)
	out.PresenceRows = cmp.Or(out.PresenceRows, d.PresenceRows)
	out.Hosts = cmp.Or(out.Hosts, d.Hosts)
	return out
}

// quotaError is the refusal a host gets when it is over a quota.
func quotaError(host, format string, a ...any) error {
	return wire.Errorf(wire.CodeQuota, "quota_exceeded: %s %s", host, fmt.Sprintf(format, a...))
}

// routeTable holds the bridged hosts: their sessions as last reported,
// the senders waiting for a remote broker's acceptance, and the local
// bridge's own report. It is a leaf: taken inside askTable.mu (failIf's
// test), it calls nothing.
type routeTable struct {
	mu     sync.Mutex
	hosts  map[string]*remoteHost
	wait   map[string]*remoteWait // senders waiting for remote acceptance
	report *wire.BridgeState      // the local bridge's last report
	tasks  *tasks
}

func newRouteTable(t *tasks) *routeTable {
	return &routeTable{hosts: map[string]*remoteHost{}, wait: map[string]*remoteWait{}, tasks: t}
}

// load reads the hosts seen before.
func (t *routeTable) load(st *store.Store) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return st.View(func(txn *store.Txn) error {
		txn.EachRemoteHost(func(h string) { t.hosts[h] = &remoteHost{host: h} })
		return nil
	})
}

// rows returns the sessions of bridged hosts as name@host rows.
func (t *routeTable) rows() []wire.Session {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []wire.Session
	for _, r := range t.hosts {
		if !r.up() && time.Since(r.lastUp) > remoteForgetAfter {
			continue
		}
		for _, s := range r.sessions {
			row := r.shown(s)
			row.ID, row.Name, row.Host = s.ID+"@"+r.host, s.Name+"@"+r.host, r.host
			row.Target = s.Target + "@" + r.host
			row.Self, row.Project = false, ""
			out = append(out, row)
		}
	}
	return out
}

// connected reports whether a pseudo id names a connected remote session
// over a live link.
func (t *routeTable) connected(pseudo string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	id, host, ok := wire.SplitRemote(pseudo)
	r := t.hosts[host]
	if !ok || r == nil || !r.up() {
		return false
	}
	for _, s := range r.sessions {
		if s.ID == id {
			return s.Connected
		}
	}
	return false
}

// nameOf returns the name@host of a remote session's pseudo id, as its host
// reported it, and whether it is connected over a live link.
func (t *routeTable) nameOf(pseudo string) (string, bool) {
	id, host, _ := wire.SplitRemote(pseudo)
	name := id + "@" + host
	for _, rs := range t.rows() {
		if rs.ID == pseudo {
			name = rs.Name
		}
	}
	return name, t.connected(pseudo)
}

// known reports whether host was ever bridged here.
func (t *routeTable) known(host string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.hosts[host] != nil
}

// admit adds host, first seen by a delivery from it, unless there are max
// hosts already.
func (t *routeTable) admit(host string, max int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.hosts[host]; ok {
		return nil
	}
	if len(t.hosts) >= max {
		return quotaError(host, "is one host too many (max %d bridged hosts)", max)
	}
	t.hosts[host] = &remoteHost{host: host}
	return nil
}

// update records a bridge's report about host: its link and, unless keep,
// its sessions (rows, validated). A host reported for the first time counts
// against max; isNew says the caller stores it. stale is called once no
// report has come for a while.
func (t *routeTable) update(req wire.BridgePresence, rows []wire.Session, max int, stale func()) (isNew bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.hosts[req.Host]
	isNew = r == nil
	if isNew {
		if len(t.hosts) >= max {
			return false, quotaError(req.Host, "is one host too many: %d bridged hosts are known here (max %d); purge old ones", len(t.hosts), max)
		}
		r = &remoteHost{host: req.Host}
		t.hosts[req.Host] = r
	}
	r.linkUp, r.updated, r.lastErr = req.LinkUp, time.Now(), req.Error
	if req.LinkUp {
		r.lastUp = r.updated
	}
	if !req.Keep && (req.LinkUp || req.Sessions != nil) {
		r.sessions = rows
		ptrs := make([]*wire.Session, len(r.sessions))
		for i := range r.sessions {
			ptrs[i] = &r.sessions[i]
		}
		presence.AssignTargets(ptrs)
	}
	// A bridge that dies silently sends no "link down": when reports stop,
	// the host goes stale and the asks waiting on it fail then.
	r.stale.Stop()
	r.stale = t.tasks.After(remoteStaleAfter+100*time.Millisecond, stale)
	return isNew, nil
}

// remove forgets a purged host.
func (t *routeTable) remove(host string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.hosts[host]; r != nil {
		r.stale.Stop()
		delete(t.hosts, host)
	}
}

// target is what a send to name@host resolves to.
type target struct {
	row wire.Session
	up  bool
}

// resolve finds name among host's sessions. A name the host does not list
// is still a target while its link is down (the message waits in the
// outbox).
func (t *routeTable) resolve(name, host string) (target, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.hosts[host]
	if r == nil || !wire.ValidHost(host) {
		return target{}, wire.Errorf(wire.CodeNotFound, "unknown host %q: no intercom-bridge has linked it", host)
	}
	if strings.Contains(name, "@") {
		return target{}, wire.Errorf(wire.CodeBadRequest, "target %q: only one @host is allowed", name+"@"+host)
	}
	toID := name + "@" + host
	out := target{row: wire.Session{ID: toID, Name: toID, Target: toID, Host: host, State: wire.StateDisconnected}, up: r.up()}
	rows := make([]*wire.Session, len(r.sessions))
	for i := range r.sessions {
		c := r.sessions[i]
		rows[i] = &c
	}
	if s, err := presence.Resolve(rows, name, ""); err == nil {
		toID = s.ID + "@" + host
		out.row = r.shown(*s)
		out.row.ID, out.row.Name, out.row.Target, out.row.Host = toID, s.Name+"@"+host, s.Target+"@"+host, host
	} else if out.up {
		return target{}, wire.Errorf(wire.CodeNotFound, "no session matches %q on %s", name, host)
	}
	return out, nil
}

// remoteWait is a sender waiting for the remote acceptance of its
// message. It is answered once, by the first of the ack that settles the
// message and its own timeout; a transient refusal claims it first (the
// refusal deletes the message only for a sender still waiting), and the
// timeout then leaves the answer to that refusal's commit.
type remoteWait struct {
	ch      chan remoteOutcome // buffered: the one answer
	claimed bool
}

// remoteOutcome is what a waiting sender is told: the remote broker's
// answer (ack), or that its message is still queued.
type remoteOutcome struct {
	ack    wire.BridgeAck
	queued bool
}

// expect registers a sender waiting for the remote acceptance of message
// id; nil when host's link is down (the sender is told "queued" at once).
func (t *routeTable) expect(host, id string) chan remoteOutcome {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.hosts[host]; r == nil || !r.up() {
		return nil
	}
	w := &remoteWait{ch: make(chan remoteOutcome, 1)}
	t.wait[id] = w
	return w.ch
}

// expecting reports whether a sender waits for message id.
func (t *routeTable) expecting(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.wait[id]
	return ok
}

// claim reserves the waiting sender of message id for a transient
// refusal being committed, which must then answer it; false when no
// sender waits (any more). Claiming twice is claiming once.
func (t *routeTable) claim(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.wait[id]
	if w != nil {
		w.claimed = true
	}
	return w != nil
}

// answer tells the waiting sender of message id o, and forgets it; false
// when none waits (any more): it timed out or was answered before.
func (t *routeTable) answer(id string, o remoteOutcome) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.wait[id]
	if w == nil {
		return false
	}
	delete(t.wait, id)
	w.ch <- o // buffered, and answered once
	return true
}

// timedOut forgets the sender of message id when its wait ran out and
// nothing claimed it (it is then told "queued"); false when an answer was
// given or is being committed: the sender takes it from its channel.
func (t *routeTable) timedOut(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.wait[id]
	if w == nil || w.claimed {
		return false
	}
	delete(t.wait, id)
	return true
}

// forget drops the sender of message id, answered some other way.
func (t *routeTable) forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.wait, id)
}

// setReport records the local bridge's report.
func (t *routeTable) setReport(rep wire.BridgeState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.report = &rep
}

// status fills the link part of `intercom-bridge status`: the bridge's
// fresh report and each host's link.
func (t *routeTable) status(out *wire.BridgeStatusReply, hosts map[string]*wire.BridgeHostStatus) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rep := t.report; rep != nil && time.Since(rep.Reported) < bridgeReportFresh {
		c := *rep
		out.Bridge = &c
	}
	for h, r := range t.hosts {
		st := hosts[h]
		if st == nil {
			st = &wire.BridgeHostStatus{Host: h}
			hosts[h] = st
		}
		st.LinkUp, st.Sessions, st.LastReport, st.LastError = r.up(), len(r.sessions), r.updated, r.lastErr
	}
}

// failRemoteAsks fails the asks to sessions of host that are gone or whose
// link is down or stale, like asks to local sessions that left.
func (b *Broker) failRemoteAsks(host string) {
	b.asks.failIf(func(a *ask) bool {
		_, h, ok := wire.SplitRemote(a.to)
		return ok && h == host && !b.routes.connected(a.to)
	})
}

// cleanRemoteRows keeps the presence rows of a host that pass the checks
// local registrations pass, at most limit of them, each id once; it returns
// how many it dropped. A remote row carries only that host's own sessions:
// no host, project or self of its own.
func cleanRemoteRows(rows []wire.Session, limit int) ([]wire.Session, int) {
	out := make([]wire.Session, 0, min(len(rows), limit))
	seen := make(map[string]bool, len(rows))
	for _, s := range rows {
		if len(out) >= limit || seen[s.ID] || validRemoteRow(&s) != nil {
			continue
		}
		seen[s.ID] = true
		s.Host, s.Project, s.Self, s.Ephemeral, s.Target = "", "", false, false, ""
		s.PendingAsks, s.Queued = min(max(s.PendingAsks, 0), 1<<20), min(max(s.Queued, 0), 1<<30)
		out = append(out, s)
	}
	return out, len(rows) - len(out)
}

// validRemoteRow checks one presence row like a registration.
func validRemoteRow(s *wire.Session) error {
	if err := wire.ValidID(s.ID); err != nil {
		return err
	}
	if err := wire.ValidateName(s.Name); err != nil {
		return err
	}
	if s.Cwd != "" {
		if err := wire.ValidLabel("cwd", s.Cwd); err != nil {
			return err
		}
	}
	if s.Model != "" {
		if err := wire.ValidLabel("model", s.Model); err != nil {
			return err
		}
	}
	if err := wire.ValidateStatus(s.Status); err != nil {
		return err
	}
	switch s.State {
	case wire.StateIdle, wire.StateBusy, wire.StateUnknown, wire.StateDisconnected:
	default:
		return fmt.Errorf("invalid state %q", s.State)
	}
	if s.Host != "" {
		return fmt.Errorf("row of host %q relayed: a host lists only its own sessions", s.Host)
	}
	return nil
}

func (b *Broker) bridgePresence(req wire.BridgePresence) (*wire.Empty, error) {
	if !wire.ValidHost(req.Host) {
		return nil, wire.Errorf(wire.CodeBadRequest, "invalid host %q", req.Host)
	}
	lim := limitsOf(req.Limits)
	var rows []wire.Session
	dropped := 0
	if !req.Keep {
		rows, dropped = cleanRemoteRows(req.Sessions, lim.PresenceRows)
	}
	host := req.Host
	isNew, err := b.routes.update(req, rows, lim.Hosts, func() { b.failRemoteAsks(host) })
	if err != nil {
		return nil, err
	}
	b.failRemoteAsks(host)
	if dropped > 0 {
		b.log.Warn("bridged host listed sessions that fail the checks (or too many); dropped", "host", req.Host, "dropped", dropped, "kept", len(rows))
	}
	if isNew {
		if err := b.st.Update(func(txn *store.Txn) error { return txn.PutRemoteHost(req.Host) }); err != nil {
			return nil, err
		}
	}
	return &wire.Empty{}, nil
}

// bridgeState records the local bridge's report about its link.
func (b *Broker) bridgeState(req wire.BridgeState) (*wire.Empty, error) {
	req.Reported = time.Now().UTC()
	b.routes.setReport(req)
	return &wire.Empty{}, nil
}

// bridgeStatus answers `intercom-bridge status`.
func (b *Broker) bridgeStatus(struct{}) (*wire.BridgeStatusReply, error) {
	out := &wire.BridgeStatusReply{Hosts: []wire.BridgeHostStatus{}}
	outbox, usage := b.ledger.outboxes()
	hosts := map[string]*wire.BridgeHostStatus{}
	for h, n := range outbox {
		hosts[h] = &wire.BridgeHostStatus{Host: h, Outbox: n}
	}
	b.routes.status(out, hosts)
	for h, st := range hosts {
		if u, ok := usage[h]; ok {
			st.InboxQueued, st.InboxBytes, st.Records, st.Subs = u.messages, u.bytes, u.records, u.subs
		}
		out.Hosts = append(out.Hosts, *st)
	}
	slices.SortFunc(out.Hosts, func(x, y wire.BridgeHostStatus) int { return cmp.Compare(x.Host, y.Host) })
	return out, nil
}
