package broker

import (
	"cmp"
	"fmt"
	"slices"
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

// bridgeReportFresh: a bridge whose last state report is older is shown as
// not running by `intercom-bridge status`.
const bridgeReportFresh = 5 * time.Second

type remoteHost struct {
	host     string
	linkUp   bool
	sessions []wire.Session // as the remote broker reports them, validated
	updated  time.Time
	stale    *time.Timer // fires when no report has come for remoteStaleAfter
	lastErr  string      // the bridge's last trouble with this host
}

// up reports whether the link to the host is up, per a recent report.
func (r *remoteHost) up() bool { return r.linkUp && time.Since(r.updated) < remoteStaleAfter }

// wakeKey is where a topic wake-up is stored: the subscriber's inbox, or
// the outbox of a remote subscriber's host.
func wakeKey(m wire.Message) string {
	if _, host, remote := wire.SplitRemote(m.To); remote {
		return store.OutboxKey(host, m.Seq)
	}
	return store.InboxKey(m.To, m.Seq)
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

func (b *Broker) loadRemotes() error {
	return b.st.View(func(txn *store.Txn) error {
		return txn.Scan(store.RemoteHostsPrefix, func(k string, _ []byte) (bool, error) {
			h := store.RemoteHostOf(k)
			b.remotes[h] = &remoteHost{host: h}
			return true, nil
		})
	})
}

// remoteRowsLocked returns the sessions of bridged hosts as name@host rows.
func (b *Broker) remoteRowsLocked() []wire.Session {
	var out []wire.Session
	for _, r := range b.remotes {
		for _, s := range r.sessions {
			row := s
			row.ID, row.Name, row.Host = s.ID+"@"+r.host, s.Name+"@"+r.host, r.host
			row.Target = s.Target + "@" + r.host
			row.Self, row.Project = false, ""
			if !r.up() {
				row.Connected, row.State, row.AcceptsAsks = false, wire.StateDisconnected, false
			}
			out = append(out, row)
		}
	}
	return out
}

// failRemoteAsksLocked fails the asks to sessions of host that are gone or
// whose link is down or stale, like asks to local sessions that left.
func (b *Broker) failRemoteAsksLocked(host string) {
	for _, a := range b.asks {
		if _, h, ok := wire.SplitRemote(a.to); ok && h == host && !b.remoteConnectedLocked(a.to) {
			if a.waiter != "" {
				b.publish(a.waiter, wire.AskEvent{AskID: a.id, Reason: "peer_disconnected"})
			}
			b.retireAskLocked(a)
		}
	}
}

// remoteConnectedLocked reports whether a pseudo id names a connected
// remote session over a live link.
func (b *Broker) remoteConnectedLocked(pseudo string) bool {
	id, host, ok := wire.SplitRemote(pseudo)
	r := b.remotes[host]
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
	b.mu.Lock()
	r := b.remotes[req.Host]
	isNew := r == nil
	if isNew {
		if len(b.remotes) >= lim.Hosts {
			b.mu.Unlock()
			return nil, quotaError(req.Host, "is one host too many: %d bridged hosts are known here (max %d); purge old ones", len(b.remotes), lim.Hosts)
		}
		r = &remoteHost{host: req.Host}
		b.remotes[req.Host] = r
	}
	r.linkUp, r.updated, r.lastErr = req.LinkUp, time.Now(), req.Error
	if !req.Keep && (req.LinkUp || req.Sessions != nil) {
		r.sessions = rows
		ptrs := make([]*wire.Session, len(r.sessions))
		for i := range r.sessions {
			ptrs[i] = &r.sessions[i]
		}
		presence.AssignTargets(ptrs)
	}
	b.failRemoteAsksLocked(req.Host)
	// A bridge that dies silently sends no "link down": when reports stop,
	// the host goes stale and the asks waiting on it fail then.
	if r.stale != nil {
		r.stale.Stop()
	}
	host := req.Host
	r.stale = time.AfterFunc(remoteStaleAfter+100*time.Millisecond, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.failRemoteAsksLocked(host)
	})
	b.mu.Unlock()
	if dropped > 0 {
		b.log.Warn("bridged host listed sessions that fail the checks (or too many); dropped", "host", req.Host, "dropped", dropped, "kept", len(rows))
	}
	if isNew {
		if err := b.st.Update(func(txn *store.Txn) error { return txn.Set(store.RemoteHostKey(req.Host), nil) }); err != nil {
			return nil, err
		}
	}
	return &wire.Empty{}, nil
}

// bridgeState records the local bridge's report about its link.
func (b *Broker) bridgeState(req wire.BridgeState) (*wire.Empty, error) {
	req.Reported = time.Now().UTC()
	b.mu.Lock()
	b.bridgeRep = &req
	b.mu.Unlock()
	return &wire.Empty{}, nil
}

// bridgeStatus answers `intercom-bridge status`.
func (b *Broker) bridgeStatus(struct{}) (*wire.BridgeStatusReply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := &wire.BridgeStatusReply{Hosts: []wire.BridgeHostStatus{}}
	if rep := b.bridgeRep; rep != nil && time.Since(rep.Reported) < bridgeReportFresh {
		c := *rep
		out.Bridge = &c
	}
	hosts := map[string]bool{}
	for h := range b.remotes {
		hosts[h] = true
	}
	for h := range b.led.outbox {
		hosts[h] = true
	}
	for h := range hosts {
		st := wire.BridgeHostStatus{Host: h, Outbox: b.led.outbox[h]}
		if r := b.remotes[h]; r != nil {
			st.LinkUp, st.Sessions, st.LastReport, st.LastError = r.up(), len(r.sessions), r.updated, r.lastErr
		}
		if u := b.led.hosts[h]; u != nil {
			st.InboxQueued, st.InboxBytes, st.Records, st.Subs = u.messages, u.bytes, u.records, u.subs
		}
		out.Hosts = append(out.Hosts, st)
	}
	slices.SortFunc(out.Hosts, func(x, y wire.BridgeHostStatus) int { return cmp.Compare(x.Host, y.Host) })
	return out, nil
}
