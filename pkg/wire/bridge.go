package wire

import (
	"regexp"
	"strings"
)

// Bridge API: an intercom-bridge process, connected to its local broker as
// a client, reports the remote host's sessions, takes the local outbox
// addressed to that host, and stores messages arriving from it.
const (
	SubjBridgePresence = SubjectPrefix + "bridge.presence"
	SubjBridgeDeliver  = SubjectPrefix + "bridge.deliver"
	SubjBridgeOutbox   = SubjectPrefix + "bridge.outbox"
	SubjBridgeAck      = SubjectPrefix + "bridge.ack"
	SubjBridgeTopic    = SubjectPrefix + "bridge.topic"
	bridgeOutPrefix    = SubjectPrefix + "bridge.out."
)

// BridgeOut is where the broker announces a new outbox message for host.
func BridgeOut(host string) string { return bridgeOutPrefix + host }

var hostRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,62}$`)

// ValidHost reports whether h is an acceptable bridge host name.
func ValidHost(h string) bool { return hostRE.MatchString(h) }

// SplitRemote splits "name@host" into its parts; ok is false for local
// targets.
func SplitRemote(target string) (name, host string, ok bool) {
	i := strings.LastIndexByte(target, '@')
	if i <= 0 || i == len(target)-1 {
		return "", "", false
	}
	return target[:i], target[i+1:], true
}

// BridgePresence reports a remote host's sessions and link state.
type BridgePresence struct {
	Host     string    `json:"host"`
	LinkUp   bool      `json:"link_up"`
	Sessions []Session `json:"sessions"`
}

// BridgeDeliver stores a message that came from host. Message.From carries
// the remote sender's native id and name; Message.To the local target.
type BridgeDeliver struct {
	Host    string  `json:"host"`
	Message Message `json:"message"`
}

// BridgeOutboxRequest asks for the messages waiting for host.
type BridgeOutboxRequest struct {
	Host  string `json:"host"`
	Limit int    `json:"limit,omitempty"`
}

// BridgeAck settles one outbox message: forwarded (Result) or refused by
// the remote side (Error).
type BridgeAck struct {
	Host   string     `json:"host"`
	ID     string     `json:"id"`
	Result *SendReply `json:"result,omitempty"`
	Error  *Error     `json:"error,omitempty"`
}

// BridgeTopic runs a topic operation on behalf of a remote session.
type BridgeTopic struct {
	Host      string            `json:"host"`
	Op        string            `json:"op"` // subscribe, unsubscribe, publish, topics
	From      Peer              `json:"from"`
	Subscribe *SubscribeRequest `json:"subscribe,omitempty"`
	Publish   *PublishRequest   `json:"publish,omitempty"`
	Topic     string            `json:"topic,omitempty"`
}

// BridgeTopicReply answers BridgeTopic.
type BridgeTopicReply struct {
	Subscribe *SubscribeReply `json:"subscribe,omitempty"`
	Publish   *PublishReply   `json:"publish,omitempty"`
	Topics    []TopicInfo     `json:"topics,omitempty"`
}
