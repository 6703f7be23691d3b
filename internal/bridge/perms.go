package bridge

import (
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Subjects of the link. A request from host F to host T travels on
// icb.req.<T>.<F>.<op>; each host broadcasts its sessions on icb.pres.<H>;
// replies come back on the requester's own inbox, icb.inbox.<F>.…. Host
// names may contain '.', the NATS token separator: in subjects it is
// written '_', which no host name contains.
const (
	reqPrefix   = "icb.req."
	presPrefix  = "icb.pres."
	relayPrefix = "icb.hpres." // presence as the embedded hub relays it, within each host's rates
	inboxRoot   = "icb.inbox."
	opDeliver   = "deliver"
	// opDeliverBatch carries several messages (wire.BridgeDeliverBatch); a
	// bridge that predates it answers "unknown operation".
	opDeliverBatch = "deliverbatch"
	opTopic        = "topic"
	responseTTL    = 10 * time.Second
)

func token(host string) string    { return strings.ReplaceAll(host, ".", "_") }
func untoken(tok string) string   { return strings.ReplaceAll(tok, "_", ".") }
func inboxPrefix(h string) string { return inboxRoot + token(h) }

func reqSubject(to, from, op string) string {
	return reqPrefix + token(to) + "." + token(from) + "." + op
}

func presSubject(host string) string { return presPrefix + token(host) }

// presenceRoute is where a bridge reads the other hosts' presence (In, a
// prefix) and publishes its own (Out). On the embedded hub no host reads
// another's broadcast directly: the hub's own bridge reads them all,
// limits each host's rate and bytes, and relays what passed (Relay), so
// that one host's flood never fans out to the others. On a team's NATS
// server, which limits no rate, the hosts read each other directly and
// each limits the others itself.
type presenceRoute struct {
	In, Out string
	Relay   bool
}

var (
	directPresence = presenceRoute{In: presPrefix, Out: presPrefix}               // a team's NATS server
	hubPresence    = presenceRoute{In: presPrefix, Out: relayPrefix, Relay: true} // the hub's own bridge
	joinedPresence = presenceRoute{In: relayPrefix, Out: presPrefix}              // a host joined to an embedded hub
)

// parseReq splits a request subject into its destination, source and op.
func parseReq(subject string) (to, from, op string, ok bool) {
	parts := strings.Split(strings.TrimPrefix(subject, reqPrefix), ".")
	if !strings.HasPrefix(subject, reqPrefix) || len(parts) != 3 {
		return "", "", "", false
	}
	return untoken(parts[0]), untoken(parts[1]), parts[2], true
}

// Permissions are what host may do on a link: publish requests from
// itself to any host and its own presence; receive requests for itself,
// everyone's presence and replies on its own inbox; answer only the
// requests it received (allow_responses: one reply each, within
// responseTTL). No '>', no other host's subjects. The embedded hub gives
// them to each certificate's user, and NATSConfig writes the same rules for
// a team's nats-server.
func Permissions(host string) *server.Permissions {
	t := token(host)
	return permissions(t, presPrefix)
}

// hubPermissions are Permissions on the embedded hub: hosts read the
// presence the hub relays (relayPrefix), not each other's; the hub's own
// bridge reads every broadcast and publishes the relayed ones.
func hubPermissions(host string, hub bool) *server.Permissions {
	t := token(host)
	p := permissions(t, relayPrefix)
	if hub {
		p.Publish.Allow = append(p.Publish.Allow, relayPrefix+"*")
		p.Subscribe.Allow = append(p.Subscribe.Allow, presPrefix+"*")
	}
	return p
}

func permissions(t, presenceIn string) *server.Permissions {
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{reqPrefix + "*." + t + ".*", presPrefix + t}},
		Subscribe: &server.SubjectPermission{Allow: []string{
			reqPrefix + t + ".*.*", presenceIn + "*", inboxRoot + t + ".>",
		}},
		Response: &server.ResponsePermission{MaxMsgs: 1, Expires: responseTTL},
	}
}

// Connection limits of a link server (the embedded hub; NATSConfig writes
// the same for a team's server).
const (
	connsPerHost  = 2               // a bridge needs one; one more for a reconnect racing the old one
	subsPerConn   = 16              // a bridge makes three
	pendingBytes  = 16 << 20        // per connection, before the server drops a slow consumer
	writeDeadline = 5 * time.Second // a peer that does not read is dropped
)
