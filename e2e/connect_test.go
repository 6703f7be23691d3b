package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
)

// healConnect connects an in-process client to h that starts brokers with
// broker (a path).
func healConnect(t *testing.T, h *H, name, broker string) *intercom.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), msgWait)
	defer cancel()
	c, err := intercom.Connect(ctx, intercom.Options{Home: h.Home, Socket: h.Layout.Socket, BrokerCommand: broker, Name: name, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("connect %s: %v", name, err)
	}
	t.Cleanup(c.Close)
	return c
}
