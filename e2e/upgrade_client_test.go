package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// TestUpgradeOldBrokerPipelinedClient: this client against the previous
// release's broker, which knows neither lean nor batched send replies nor
// batched pushes (docs/performance.md, "Client CPU"): pipelined sends that
// ask for both are answered the old way, one whole reply each, and read;
// a holder that asks for batches is pushed one message at a time; every
// message arrives once, in order.
func TestUpgradeOldBrokerPipelinedClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the previous release")
	}
	t.Parallel()
	old := oldBinaries(t, upgradeFrom)
	h := newH(t)
	broker := filepath.Join(old, "intercom-broker")
	if _, err := os.Stat(broker); err != nil {
		t.Fatal(err)
	}
	c := healConnect(t, h, "old-broker-client", broker)
	ctx := t.Context()
	sink, err := c.Attach(ctx, intercom.AttachOptions{Name: "sink"})
	if err != nil {
		t.Fatal(err)
	}
	from, err := c.Attach(ctx, intercom.AttachOptions{Name: "src", NoDeliver: true})
	if err != nil {
		t.Fatal(err)
	}
	const n, depth = 200, 32
	var window []*intercom.SendFuture
	ids := make([]string, 0, n)
	settle := func() {
		rep, err := window[0].Wait(ctx)
		if err != nil {
			t.Fatalf("send %d: %v", len(ids), err)
		}
		if rep.ID == "" || rep.Duplicate || rep.To.Name != "sink" || rep.To.Cwd == "" {
			t.Fatalf("send %d answered %+v, want the old broker's whole row", len(ids), rep)
		}
		ids = append(ids, rep.ID)
		window = window[1:]
	}
	for i := range n {
		if len(window) == depth {
			settle()
		}
		f, err := c.SendAsync(wire.SendRequest{From: from.ID(), To: "sink", Text: fmt.Sprintf("m%d", i), Lean: true})
		if err != nil {
			t.Fatal(err)
		}
		window = append(window, f)
	}
	for len(window) > 0 {
		settle()
	}
	for i := range n {
		var m wire.Message
		select {
		case m = <-sink.Messages():
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
		if m.Text != fmt.Sprintf("m%d", i) || m.ID != ids[i] {
			t.Fatalf("delivery %d: %q (%s), want m%d (%s)", i, m.Text, m.ID, i, ids[i])
		}
		if err := sink.Ack(ctx, m.ID); err != nil {
			t.Fatal(err)
		}
	}
}
