package broker

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// classify turns a store error into the error a client is answered with.
func classify(err error) error {
	var we *wire.Error
	if errors.As(err, &we) {
		return we
	}
	if errors.Is(err, store.ErrUnavailable) {
		return unavailableReply(err)
	}
	if errors.Is(err, syscall.ENOSPC) {
		return wire.Errorf(wire.CodeNoSpace, "store message: no space left on device")
	}
	if errors.Is(err, store.ErrTxnTooBig) {
		return wire.Errorf(wire.CodeTooLarge, "store message: transaction too big")
	}
	return fmt.Errorf("store: %w", err)
}

// unavailableReply is the answer to a request the store could not take.
func unavailableReply(err error) *wire.Error {
	return wire.Errorf(wire.CodeStoreUnavailable, "%v: the broker is stopping, and this request may not have been stored", err)
}

func badRequest(err error) error { return wire.Errorf(wire.CodeBadRequest, "%v", err) }

// toWireError is the error reply for err.
func toWireError(err error) *wire.Error {
	var we *wire.Error
	if errors.As(err, &we) {
		return we
	}
	if errors.Is(err, store.ErrUnavailable) {
		return unavailableReply(err)
	}
	return wire.Errorf(wire.CodeInternal, "%v", err)
}
