package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/atomicfile"
	"github.com/intercom-dev/intercom/internal/config"
	"github.com/intercom-dev/intercom/internal/lazyre"
	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Inbound holds: config.json `inbound` gives a session a mode (accept,
// hold, refuse) with per-sender exceptions (config.InboundRule). A send
// the recipient refuses is answered with CodeRefused and nothing is
// stored. A held one is written to INTERCOM_HOME/held/<id>.json (0600, so
// it survives a restart), answered Held, and waits there, never expiring,
// until a person approves it (it is then stored and delivered like any
// send, once: the store knows its id) or refuses it. Decided records stay
// heldKeep so that trace can tell the sender what became of it.
//
// A person's own message (FromPerson) is never held or refused unless a
// sender exception names its sender; a reply to an ask the recipient is
// waiting on is always accepted (it asked for it).

// heldKeep is how long a decided record is kept for trace.
const heldKeep = 7 * 24 * time.Hour

// heldRecord is one held message's file.
type heldRecord struct {
	Message   wire.Message `json:"message"`
	ToName    string       `json:"to_name"`
	HeldAt    time.Time    `json:"held_at"`
	Decision  string       `json:"decision,omitempty"`
	DecidedAt *time.Time   `json:"decided_at,omitempty"`
}

// inboundTable serializes writes of held records and reads the inbound
// policy from config.json when the file changed.
type inboundTable struct {
	mu sync.Mutex // held records

	cfgMu    sync.Mutex
	cfgPath  string // config.json's path, once known
	cfgStamp configStamp
	cfgRead  bool // cfg was read at cfgStamp
	cfg      config.Config
}

// configStamp is what inboundConfig compares to see that config.json
// changed: its size and modification time (absent: both zero).
type configStamp struct {
	size, mtime int64
	present     bool
}

// heldID matches a message id, local or bridged (id@host): letters and
// digits only, so that it is a safe file name.
var heldID = lazyre.New(`^[A-Za-z0-9]{1,64}(@[A-Za-z0-9._-]{1,253})?$`)

func (b *Broker) heldDir() string { return filepath.Join(b.opts.Layout.Home, "held") }

func (b *Broker) heldPath(id string) string { return filepath.Join(b.heldDir(), id+".json") }

// inboundConfig is config.json as it is now (read again when its size or
// modification time changed; defaults when it is absent or invalid).
func (b *Broker) inboundConfig() config.Config {
	t := &b.inbound
	t.cfgMu.Lock()
	defer t.cfgMu.Unlock()
	if t.cfgPath == "" {
		t.cfgPath = b.opts.Layout.ConfigFile()
	}
	var stamp configStamp
	if fi, err := os.Stat(t.cfgPath); err == nil {
		stamp = configStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano(), present: true}
	}
	if !t.cfgRead || stamp != t.cfgStamp {
		cfg, _, err := config.Load(t.cfgPath)
		if err != nil {
			b.log.Warn("inbound: config.json unreadable; accepting every message", "err", err)
			cfg = config.Defaults()
		}
		t.cfg, t.cfgStamp, t.cfgRead = cfg, stamp, true
	}
	return t.cfg
}

// gateInbound marks p from a person or not (the broker's word only) and
// applies the recipient's inbound policy: an error refuses the send;
// p.held keeps it for a person's decision.
func (b *Broker) gateInbound(p *preparedSend, from session) error {
	p.msg.FromPerson = b.fromPerson(from.cid, from.ID, from.Host)
	switch b.inboundMode(p.toRow, from.Name, from.ID, p.msg.ReplyTo, p.msg.FromPerson) {
	case config.InboundRefuse:
		return refusal(p.toRow, from.Name)
	case config.InboundHold:
		p.held, p.ask = true, false
	}
	return nil
}

// gateBridged applies to's inbound policy to a message from a bridged
// host's session (fromName "name@host", fromID): never a person's (the
// remote side's word is not trusted). hold is true for a held one.
func (b *Broker) gateBridged(to wire.Session, fromName, fromID, replyTo string) (hold bool, err error) {
	switch b.inboundMode(to, fromName, fromID, replyTo, false) {
	case config.InboundRefuse:
		return false, refusal(to, fromName)
	case config.InboundHold:
		return true, nil
	}
	return false, nil
}

// inboundMode is what to does with a message from a sender: a reply to
// an ask of to's is accepted; a person's message too, unless a sender
// exception names its sender.
func (b *Broker) inboundMode(to wire.Session, fromName, fromID, replyTo string, person bool) string {
	if replyTo != "" && b.asks.asked(replyTo, to.ID, fromID) {
		return config.InboundAccept
	}
	mode, named := b.inboundConfig().InboundFor(to.Name, to.ID).ModeFor(fromName, fromID)
	if person && !named {
		return config.InboundAccept
	}
	return mode
}

func refusal(to wire.Session, fromName string) error {
	return wire.Errorf(wire.CodeRefused, "%s refuses messages from %s (its inbound setting); nothing was stored", to.Target, fromName)
}

// asked reports whether id is an ask of asker to replier still open.
func (t *askTable) asked(id, asker, replier string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.byID[id]
	return a != nil && a.from == asker && a.to == replier
}

// holdSend answers a held send once its record is on disk.
func (b *Broker) holdSend(m *nats.Msg, p *preparedSend) {
	b.tasks.Go(func() {
		res, err := b.hold(p)
		if err != nil {
			respond(m, wire.Reply[wire.SendReply]{Error: toWireError(err)})
			return
		}
		respond(m, wire.Reply[wire.SendReply]{Result: res})
	})
}

func (b *Broker) hold(p *preparedSend) (*wire.SendReply, error) {
	t := &b.inbound
	t.mu.Lock()
	defer t.mu.Unlock()
	reply := &wire.SendReply{ID: p.msg.ID, To: p.toRow, Offline: !p.toRow.Connected}
	if rec, err := b.readHeld(p.msg.ID); err == nil { // a retry
		reply.Duplicate = true
		switch rec.Decision {
		case wire.DecisionRefused:
			return nil, wire.Errorf(wire.CodeRefused, "a person refused this message (%s) for %s; nothing was stored", p.msg.ID, p.toRow.Target)
		case "":
			reply.Held = true
		}
		return reply, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if b.storeHas(p.msg.To, p.msg.ID) {
		reply.Duplicate = true
		return reply, nil
	}
	rec := heldRecord{Message: p.msg, ToName: p.toRow.Name, HeldAt: time.Now().UTC()}
	if err := b.writeHeld(rec); err != nil {
		return nil, err
	}
	b.sessions.stored(p.msg.From.ID, p.msg.To, rec.HeldAt, nil, 0)
	reply.Held = true
	b.log.Info("message held", "id", p.msg.ID, "from", p.msg.From.Name, "to", p.toRow.Name)
	return reply, nil
}

// storeHas reports whether message id to sid is stored or was delivered.
func (b *Broker) storeHas(sid, id string) bool {
	has := false
	_ = b.st.View(func(txn *store.Txn) error {
		if _, ok := txn.MessageSlot(id); ok {
			has = true
			return nil
		}
		acked, err := txn.Acked(sid, id)
		has = acked || err != nil
		return nil
	})
	return has
}

func (b *Broker) readHeld(id string) (heldRecord, error) {
	var rec heldRecord
	if !heldID().MatchString(id) {
		return rec, fmt.Errorf("held message %q: %w", id, fs.ErrNotExist)
	}
	data, err := os.ReadFile(b.heldPath(id))
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("read held message %s: %w", id, err)
	}
	return rec, nil
}

func (b *Broker) writeHeld(rec heldRecord) error {
	if err := paths.EnsurePrivateDir(b.heldDir()); err != nil {
		return err
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(b.heldPath(rec.Message.ID), data, 0o600); err != nil {
		return fmt.Errorf("hold message %s: %w", rec.Message.ID, err)
	}
	return nil
}

// heldRecords reads every record, oldest first, removing decided ones
// older than heldKeep.
func (b *Broker) heldRecords() ([]heldRecord, error) {
	ents, err := os.ReadDir(b.heldDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list held messages: %w", err)
	}
	var out []heldRecord
	for _, e := range ents {
		id, ok := cutJSON(e.Name())
		if !ok {
			continue
		}
		rec, err := b.readHeld(id)
		if err != nil {
			continue
		}
		if rec.DecidedAt != nil && time.Since(*rec.DecidedAt) > heldKeep {
			os.Remove(b.heldPath(id))
			continue
		}
		out = append(out, rec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].HeldAt.Before(out[j].HeldAt) })
	return out, nil
}

func cutJSON(name string) (string, bool) {
	id := name[:max(0, len(name)-len(".json"))]
	return id, id+".json" == name && heldID().MatchString(id)
}

// heldList answers `intercom held`: the messages waiting for a decision,
// to one session or to all.
func (b *Broker) heldList(req wire.HeldRequest) (*wire.HeldReply, error) {
	sid := ""
	if req.Session != "" {
		to, err := b.sessions.find(req.Session, "")
		if err != nil {
			return nil, err
		}
		sid = to.ID
	}
	b.inbound.mu.Lock()
	recs, err := b.heldRecords()
	b.inbound.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := &wire.HeldReply{Held: []wire.HeldMessage{}}
	for _, r := range recs {
		if r.Decision != "" || (sid != "" && r.Message.To != sid) {
			continue
		}
		out.Held = append(out.Held, wire.HeldMessage{Message: r.Message, ToName: r.ToName, HeldAt: r.HeldAt})
	}
	return out, nil
}
