package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/ascii"
)

// Bridge API: an intercom-bridge process, connected to its local broker as
// a client, reports the bridged hosts' sessions, takes the local outbox
// addressed to each host, and stores messages arriving from them.
const (
	SubjBridgePresence = SubjectPrefix + "bridge.presence"
	SubjBridgeDeliver  = SubjectPrefix + "bridge.deliver"
	SubjBridgeOutbox   = SubjectPrefix + "bridge.outbox"
	SubjBridgeAck      = SubjectPrefix + "bridge.ack"
	SubjBridgeTopic    = SubjectPrefix + "bridge.topic"
	SubjBridgeState    = SubjectPrefix + "bridge.state"  // the bridge reports its link
	SubjBridgeStatus   = SubjectPrefix + "bridge.status" // intercom-bridge status reads it
	SubjBridgePurge    = SubjectPrefix + "bridge.purge"
	bridgeOutPrefix    = SubjectPrefix + "bridge.out."
	bridgeRPCPrefix    = SubjectPrefix + "bridge.rpc."
)

// BridgeOut is where the broker announces a new outbox message for host,
// once it is committed; the announcement carries the message as stored.
func BridgeOut(host string) string { return bridgeOutPrefix + host }

// HeaderOutboxKick numbers the broker's outbox announcements
// ("<broker run>.<n>", n counting from 1 across all hosts, in the order
// they are published): a bridge that has seen every one since its last full
// read of an outbox knows what that outbox holds and forwards an announced
// message without reading it again. A broker without it (older) gets the
// outbox read at each announcement.
const HeaderOutboxKick = "Ic-Outbox-Kick"

// BridgeRPC is where the broker sends topic operations for host to the bridge.
func BridgeRPC(host string) string { return bridgeRPCPrefix + host }

// MaxLinkPayload is the largest NATS payload a bridge link carries: a
// message at MaxMessageBytes plus its envelope. A message whose encoding is
// bigger (text that JSON escapes heavily) is refused for remote targets.
const MaxLinkPayload = MaxMessageBytes + 64<<10

// ValidHost reports whether h is an acceptable bridge host name: 1-63 of
// a-z 0-9 . -, not starting with . or -.
func ValidHost(h string) bool { return ascii.Word(h, 1, 63, hostFirst, host) }

// SplitRemote splits "name@host" into its parts; ok is false for local
// targets.
func SplitRemote(target string) (name, host string, ok bool) {
	i := strings.LastIndexByte(target, '@')
	if i <= 0 || i == len(target)-1 {
		return "", "", false
	}
	return target[:i], target[i+1:], true
}

// BridgeLimits are the quotas of one bridged host on this machine. The
// bridge enforces the rates; the broker the stored amounts.
type BridgeLimits struct {
	MsgsPerSec    float64 `json:"msgs_per_sec"`   // messages and topic operations per second
	BytesPerSec   int64   `json:"bytes_per_sec"`  // their payload bytes per second
	InboxMessages int     `json:"inbox_messages"` // unacknowledged messages from the host, all inboxes together
	InboxBytes    int64   `json:"inbox_bytes"`    // their bytes
	TopicRecords  int     `json:"topic_records"`  // current topic records of the host's sessions
	TopicBytes    int64   `json:"topic_bytes"`    // their bytes
	Subscriptions int     `json:"subscriptions"`  // topic subscriptions of the host's sessions
	PresenceRows  int     `json:"presence_rows"`  // sessions listed for the host
	Hosts         int     `json:"hosts"`          // bridged hosts known at once
}

// DefaultBridgeLimits are the quotas used unless intercom-bridge is told
// otherwise.
func DefaultBridgeLimits() BridgeLimits {
	return BridgeLimits{
		MsgsPerSec: 50, BytesPerSec: 4 << 20,
		InboxMessages: 10000, InboxBytes: 64 << 20,
		TopicRecords: 1000, TopicBytes: 4 << 20, Subscriptions: 1000,
		PresenceRows: 2000, Hosts: 64,
	}
}

// BridgePresence reports a remote host's sessions and link state. Keep
// says the sessions did not change since the last report (Sessions is then
// empty).
type BridgePresence struct {
	Host     string        `json:"host"`
	LinkUp   bool          `json:"link_up"`
	Sessions []Session     `json:"sessions"`
	Keep     bool          `json:"keep,omitempty"`
	Error    string        `json:"error,omitempty"` // the bridge's last trouble with this host
	Limits   *BridgeLimits `json:"limits,omitempty"`
}

// BridgeDeliver stores a message that came from host. Message.From carries
// the remote sender's native id and name; Message.To the local target;
// Message.ID the sender's id, stored here as "<id>@<host>".
type BridgeDeliver struct {
	Host    string        `json:"host"`
	Message Message       `json:"message"`
	Limits  *BridgeLimits `json:"limits,omitempty"`
}

// SubjBridgeBatch stores several messages of one host in one request
// (BridgeDeliverBatch); a broker without it has no responders there.
const SubjBridgeBatch = SubjectPrefix + "bridge.deliverbatch"

// BridgeDeliverBatch stores messages that came from host, in their order:
// each as one BridgeDeliver, stopping at the first refused before it was
// stored (those after it are not tried, so a later message is never stored
// ahead of an earlier one that is retried).
type BridgeDeliverBatch struct {
	Host     string        `json:"host"`
	Messages []Message     `json:"messages"`
	Limits   *BridgeLimits `json:"limits,omitempty"`
}

// BridgeDeliverBatchReply answers BridgeDeliverBatch: Results[i] is what
// BridgeDeliver of Messages[i] answered; messages past the results were not
// tried.
type BridgeDeliverBatchReply struct {
	Results []Reply[SendReply] `json:"results"`
}

// MaxBridgeBatch is the most messages one BridgeDeliverBatch carries.
const MaxBridgeBatch = 256

// BridgeOutboxRequest asks for the messages waiting for host.
type BridgeOutboxRequest struct {
	Host  string `json:"host"`
	Limit int    `json:"limit,omitempty"`
}

// BridgeAck settles one outbox message: forwarded (Result) or refused by
// the remote side (Error). A Transient refusal (a quota) settles the message
// only if its sender is still waiting for the answer; otherwise it stays
// queued and the reply says Kept.
type BridgeAck struct {
	Host      string     `json:"host"`
	ID        string     `json:"id"`
	Result    *SendReply `json:"result,omitempty"`
	Error     *Error     `json:"error,omitempty"`
	Transient bool       `json:"transient,omitempty"`
}

// BridgeAckReply answers BridgeAck.
type BridgeAckReply struct {
	Kept bool `json:"kept,omitempty"`
}

// SubjBridgeAckBatch settles several outbox messages in one request
// (BridgeAckBatch); a broker without it has no responders there.
const SubjBridgeAckBatch = SubjectPrefix + "bridge.ackbatch"

// BridgeAckBatch is several BridgeAck, each settled as if sent alone.
type BridgeAckBatch struct {
	Acks []BridgeAck `json:"acks"`
}

// BridgeAckBatchReply answers BridgeAckBatch: Results[i] answers Acks[i].
type BridgeAckBatchReply struct {
	Results []Reply[BridgeAckReply] `json:"results"`
}

// BridgeTopic runs a topic operation on behalf of a remote session. Exports
// are the topic prefixes this host exports to the remote one.
type BridgeTopic struct {
	Host      string            `json:"host"`
	Op        string            `json:"op"` // subscribe, unsubscribe, publish, topics
	From      Peer              `json:"from"`
	Subscribe *SubscribeRequest `json:"subscribe,omitempty"`
	Publish   *PublishRequest   `json:"publish,omitempty"`
	Topic     string            `json:"topic,omitempty"`
	Offset    int               `json:"offset,omitempty"`
	Exports   []string          `json:"exports,omitempty"`
	Limits    *BridgeLimits     `json:"limits,omitempty"`
}

// BridgeTopicReply answers BridgeTopic.
type BridgeTopicReply struct {
	Subscribe  *SubscribeReply `json:"subscribe,omitempty"`
	Publish    *PublishReply   `json:"publish,omitempty"`
	Topics     []TopicInfo     `json:"topics,omitempty"`
	NextOffset int             `json:"next_offset,omitempty"`
}

// CheckReply checks a remote host's answer to a topic operation op: it must
// carry the part op needs (a subscription for subscribe and unsubscribe, a
// publication for publish) and nothing malformed. A hostile host answers
// whatever it likes; the local broker uses only what passed.
func (r *BridgeTopicReply) CheckReply(op string) error {
	switch op {
	case "subscribe", "unsubscribe":
		if r.Subscribe == nil {
			return fmt.Errorf("%s: the reply has no subscription", op)
		}
	case "publish":
		if r.Publish == nil {
			return fmt.Errorf("%s: the reply has no publication", op)
		}
	case "topics":
		if r.NextOffset < 0 {
			return fmt.Errorf("topics: next offset %d", r.NextOffset)
		}
		for _, ti := range r.Topics {
			if err := ValidateTopic(ti.Topic); err != nil || strings.Contains(ti.Topic, "@") {
				return fmt.Errorf("topics: the reply lists an invalid topic %q", ti.Topic)
			}
		}
	default:
		return fmt.Errorf("unknown topic operation %q", op)
	}
	return nil
}

// BridgeState is what the local bridge reports about itself.
type BridgeState struct {
	Name      string    `json:"name"`
	Mode      string    `json:"mode"` // serve or join
	Addr      string    `json:"addr"`
	Peers     string    `json:"peers"`
	Connected bool      `json:"connected"`
	LastError string    `json:"last_error,omitempty"`
	ErrorAt   time.Time `json:"error_at,omitzero"`
	Since     time.Time `json:"since"`
	CRL       string    `json:"crl"` // the revocation list in force, or why none is
	Pid       int       `json:"pid"`
	Reported  time.Time `json:"reported_at,omitzero"`
}

// BridgeHostStatus is one bridged host as the local broker knows it.
type BridgeHostStatus struct {
	Host        string    `json:"host"`
	LinkUp      bool      `json:"link_up"`
	Sessions    int       `json:"sessions"`
	Outbox      int       `json:"outbox"`         // our messages waiting for it
	InboxQueued int       `json:"inbox_messages"` // its unacknowledged messages here
	InboxBytes  int64     `json:"inbox_bytes"`
	Records     int       `json:"topic_records"`
	Subs        int       `json:"subscriptions"`
	LastReport  time.Time `json:"last_report,omitzero"`
	LastError   string    `json:"last_error,omitempty"`
}

// BridgeStatusReply answers a status request.
type BridgeStatusReply struct {
	Bridge *BridgeState       `json:"bridge"` // nil: no bridge has reported recently
	Hosts  []BridgeHostStatus `json:"hosts"`
}

// BridgePurge drops everything host left here: its messages in local
// inboxes, its topic records and subscriptions, its pending asks and its
// sessions; with Outbox, also our messages still waiting for it.
type BridgePurge struct {
	Host   string `json:"host"`
	Outbox bool   `json:"outbox,omitempty"`
}

// BridgePurgeReply counts what was dropped.
type BridgePurgeReply struct {
	Host          string `json:"host"`
	Messages      int    `json:"messages"`
	Records       int    `json:"topic_records"`
	Subscriptions int    `json:"subscriptions"`
	Outbox        int    `json:"outbox"`
}

// LinkJSON encodes v as a bridge link payload: JSON without HTML escaping
// (which would make '<', '>' and '&' six bytes each).
func LinkJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
