package intercom

import (
	"errors"
	"io"
	"syscall"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/spawn"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Errors returned by the client; match them with errors.Is. Broker errors
// are *wire.Error values whose Code selects the sentinel.
var (
	ErrBadRequest  = &wire.Error{Code: wire.CodeBadRequest}
	ErrNotFound    = &wire.Error{Code: wire.CodeNotFound}
	ErrAmbiguous   = &wire.Error{Code: wire.CodeAmbiguous}
	ErrSelf        = &wire.Error{Code: wire.CodeSelf}
	ErrTooLarge    = &wire.Error{Code: wire.CodeTooLarge}
	ErrAskBusy     = &wire.Error{Code: wire.CodeAskBusy}
	ErrPeerOffline = &wire.Error{Code: wire.CodePeerOffline}
	ErrNoSpace     = &wire.Error{Code: wire.CodeNoSpace}
	// ErrStoreUnavailable: the broker could not store the request (its home
	// is gone, unwritable or failing) and is stopping.
	ErrStoreUnavailable = &wire.Error{Code: wire.CodeStoreUnavailable}
	ErrFull             = &wire.Error{Code: wire.CodeFull}
	// ErrHeld: the session asked for by id is held by another live holder.
	ErrHeld = &wire.Error{Code: wire.CodeHeld}

	// ErrNoBroker: no broker answered and none could be started.
	ErrNoBroker = spawn.ErrNoBroker
	// ErrUnhealthy: a broker process looks alive but its socket is dead.
	ErrUnhealthy = spawn.ErrUnhealthy
	// ErrHomeGone: INTERCOM_HOME was deleted while in use; the client does
	// not start a broker in a new, empty one (see Client.Done).
	ErrHomeGone = spawn.ErrHomeGone
	// ErrAskTimeout: no reply arrived in time.
	ErrAskTimeout = errors.New("ask timed out")
	// ErrPeerDisconnected: the asked session left before answering.
	ErrPeerDisconnected = errors.New("peer disconnected before answering")
	// ErrAskerDisconnected: the asking session itself went away (its
	// holder left) while the ask waited, so the ask was withdrawn.
	ErrAskerDisconnected = errors.New("asking session disconnected")
	// ErrPeerBusy: the target does not accept asks now; the message was
	// delivered but nobody waits for a reply.
	ErrPeerBusy = errors.New("peer_busy")
	// ErrAskHeld: the target holds inbound messages; the ask is kept for
	// a person to approve or refuse (`intercom held`), and nobody waits for
	// its reply.
	ErrAskHeld = errors.New("held for a person's approval")
	// ErrRefused: the target refuses messages from this sender (its
	// inbound setting), or a person refused the message.
	ErrRefused = &wire.Error{Code: wire.CodeRefused}
)

// Unavailable reports whether err means the broker could not be reached or
// went away mid-request (it is being restarted): worth retrying, unlike an
// answer from the broker.
func Unavailable(err error) bool {
	var we *wire.Error
	if err == nil || errors.As(err, &we) {
		return false
	}
	for _, target := range []error{ErrNoBroker, nats.ErrNoResponders, nats.ErrConnectionClosed, nats.ErrTimeout,
		nats.ErrNoServers, io.EOF, io.ErrUnexpectedEOF, syscall.ECONNRESET, syscall.EPIPE, syscall.ECONNREFUSED} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// wentAway reports whether err (from a dial or a handshake) says the broker
// closed or refused the connection, or was not there: worth dialling again.
// A handshake that timed out is not: a hung broker stays hung.
func wentAway(err error) bool {
	return Unavailable(err) && !errors.Is(err, nats.ErrTimeout)
}
