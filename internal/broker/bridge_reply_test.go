package broker

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// answerTopicRPC plays beta's bridge: every topic operation for beta gets
// the reply raw.
func (w *world) answerTopicRPC(raw string) {
	w.t.Helper()
	sub, err := w.c.Conn().Subscribe(wire.BridgeRPC("beta"), func(m *nats.Msg) { _ = m.Respond([]byte(raw)) })
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.c.Conn().Flush(); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { _ = sub.Unsubscribe() })
}

// A remote host's answer to a topic operation is decoded into the shape the
// operation needs: a reply without it (`{"result":{}}`, the wrong op's
// part, a bad listing) is an error for the local session, never a crash of
// the broker. (On main it panicked: nil dereference in onPublish and
// forwardSubscription.)
func TestRemoteTopicReplyChecked(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{"result":{}}`,
		`{"result":{"subscribe":{"topic":"x"}}}`,
		`{"result":{"publish":{"topic":"x","seq":1}}}`,
		`{"result":{"topics":[{"topic":"shared/x\u001b[2J"}]}}`,
		`{"result":{"topics":[],"next_offset":-5}}`,
		`{"result":null}`, `{}`, `[]`, `null`, `{"error":{}}`,
	} {
		t.Run(raw, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			ctx := t.Context()
			a := w.attach("alpha")
			w.reportBeta(true)
			w.answerTopicRPC(raw)
			_, perr := w.c.Publish(ctx, wire.PublishRequest{From: a.ID(), Topic: "shared/x@beta", Message: "m"})
			_, serr := w.c.Subscribe(ctx, a.ID(), "shared/x@beta", true)
			uerr := w.c.Unsubscribe(ctx, a.ID(), "shared/x@beta")
			_, terr := w.c.Topics(ctx, "shared/x@beta")
			errs := map[string]error{"publish": perr, "subscribe": serr, "unsubscribe": uerr, "topics": terr}
			for op, err := range errs {
				ok := err == nil
				switch {
				case op == "publish" && raw == `{"result":{"publish":{"topic":"x","seq":1}}}`,
					(op == "subscribe" || op == "unsubscribe") && raw == `{"result":{"subscribe":{"topic":"x"}}}`:
					if !ok {
						t.Errorf("%s with a well-formed reply: %v", op, err)
					}
				case op == "topics" && strings.HasPrefix(raw, `{"result":{"`) && !strings.Contains(raw, `"topics"`),
					op == "topics" && raw == `{"result":{}}`: // no topics: an empty listing
					if !ok {
						t.Errorf("%s with an empty listing: %v", op, err)
					}
				default:
					if ok {
						t.Errorf("%s answered %s: accepted", op, raw)
					}
				}
			}
			// The broker is alive and answers.
			if _, err := w.c.Topics(ctx, ""); err != nil {
				t.Fatalf("broker after the replies: %v", err)
			}
		})
	}
}
