package broker

import (
	"encoding/json"
	"testing"

	"github.com/intercom-dev/intercom/internal/presence"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// FuzzValidateSend feeds arbitrary send requests (as a peer could publish
// them) through the broker's validation: it must never panic, and what it
// accepts must respect the limits.
func FuzzValidateSend(f *testing.F) {
	for _, s := range []string{
		`{"from":"a","to":"b","text":"hi"}`,
		`{"from":"a","to":"b","text":"x","delivery":"queue","queue_mode":"replace","thread":"t"}`,
		`{"from":"a","to":"b","text":"x","delivery":"passive","expects_reply":true}`,
		`{"from":"a","to":"b","attachments":[{"type":"file","name":"n","content":"c"}]}`,
		`{"to":"b"}`, `[]`, `{"from":"a","to":"b","text":"\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req wire.SendRequest
		if json.Unmarshal(data, &req) != nil {
			return
		}
		if validateSend(&req) != nil {
			return
		}
		m := wire.Message{Text: req.Text, Attachments: req.Attachments}
		if m.Size() > wire.MaxMessageBytes {
			t.Fatalf("accepted %d bytes", m.Size())
		}
		if req.Delivery == wire.DeliveryPassive && req.ExpectsReply {
			t.Fatal("accepted a passive ask")
		}
		if (req.QueueMode == "replace") != (req.Thread != "") {
			t.Fatal("accepted thread/replace mismatch")
		}
		if presence.ValidText("t", req.Text) != nil {
			t.Fatal("accepted control characters")
		}
	})
}

func FuzzValidatePublish(f *testing.F) {
	for _, s := range []string{
		`{"from":"a","topic":"t/x","message":"m"}`,
		`{"from":"a","topic":"t","event":"release","resource":"r","ownership":"held","message":"m"}`,
		`{"topic":"a b","message":"m"}`, `{"topic":"x/*","message":"m"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req wire.PublishRequest
		if json.Unmarshal(data, &req) != nil {
			return
		}
		if validatePublish(&req) != nil {
			return
		}
		if presence.ValidateTopic(req.Topic) != nil || (req.Resource == "") != (req.Ownership == "") {
			t.Fatalf("accepted %+v", req)
		}
	})
}
