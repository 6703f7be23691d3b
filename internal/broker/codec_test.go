package broker

import (
	stdjson "encoding/json"
	"reflect"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// TestCodecMatchesEncodingJSON: the broker encodes and decodes its hot
// types with goccy/go-json; clients use encoding/json. Both must write the
// same bytes and read each other's.
func TestCodecMatchesEncodingJSON(t *testing.T) {
	at := time.Date(2026, 12, 1, 11, 30, 0, 123456789, time.UTC)
	msg := wire.Message{
		ID: "m0123456789abcdef0123", Seq: 42, From: wire.Peer{ID: "s1", Name: "alice <&>", Cwd: "/tmp/x"}, To: "s2",
		Text: "hello \"world\"\n\u2028 é", Delivery: wire.DeliverySteer, ExpectsReply: true, ReplyTo: "m1", Thread: "t",
		QueueMode: "replace", Attachments: []wire.Attachment{{Name: "a.go", Content: "package a", Language: "go"}}, SentAt: at,
	}
	row := wire.Session{ID: "s2", Name: "bob", Target: "bob", LastSeen: at, LastIntercomActivity: &at, Connected: true, Queued: 3}
	values := []any{
		msg,
		wire.Message{ID: "m2", To: "s2", SentAt: at},
		wire.Reply[wire.SendReply]{Result: &wire.SendReply{ID: "m2", To: row, Duplicate: true}},
		wire.Reply[wire.SendReply]{Error: &wire.Error{Code: wire.CodeAmbiguous, Message: "which?", Choices: []string{"a", "b"}}},
		wire.Reply[wire.AckReply]{Result: &wire.AckReply{Acked: 7}},
		storedTrace{From: msg.From, To: "s2", Stored: at, Pushed: []time.Time{at, at.Add(time.Millisecond)}, Acked: at},
		wire.SendRequest{From: "s1", To: "bob", Text: "x", ClientMsgID: "c1", TimeoutMs: 5},
	}
	for _, v := range values {
		want, err := stdjson.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("%T encodes differently:\n goccy %s\n std   %s", v, got, want)
		}
		back := reflect.New(reflect.TypeOf(v))
		if err := json.Unmarshal(want, back.Interface()); err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if again, _ := stdjson.Marshal(back.Elem().Interface()); string(again) != string(want) {
			t.Fatalf("%T decodes differently: %s, want %s", v, again, want)
		}
	}
}
