package store

import (
	stdjson "encoding/json"
	"reflect"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// TestCodecMatchesEncodingJSON: the store keeps messages and traces
// encoded with goccy/go-json; the store written by an earlier broker (and
// by this one) must read back alike with either codec. The wire types are
// checked in pkg/wire (TestCodecsAgree).
func TestCodecMatchesEncodingJSON(t *testing.T) {
	at := time.Date(2026, 12, 1, 11, 30, 0, 123456789, time.UTC)
	msg := wire.Message{
		ID: "m0123456789abcdef0123", Seq: 42, From: wire.Peer{ID: "s1", Name: "alice <&>", Cwd: "/tmp/x"}, To: "s2",
		Text: "hello \"world\"\n\u2028 é", Delivery: wire.DeliverySteer, ExpectsReply: true, ReplyTo: "m1", Thread: "t",
		QueueMode: "replace", Attachments: []wire.Attachment{{Name: "a.go", Content: "package a", Language: "go"}}, SentAt: at,
	}
	values := []any{
		msg,
		wire.Message{ID: "m2", To: "s2", SentAt: at},
		Trace{From: msg.From, To: "s2", Stored: at, Pushed: []time.Time{at, at.Add(time.Millisecond)}, Acked: at},
		Trace{To: "s2", Acked: at},
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
