package wire

import (
	"fmt"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"
)

// A backlog push as the broker writes it: 128 messages of 128 bytes from
// one sender.
func benchPush() []byte {
	msgs := make([]Message, 128)
	for i := range msgs {
		msgs[i] = Message{ID: fmt.Sprintf("m%020x", i), Seq: uint64(1000 + i), From: Peer{ID: "0123456789abcdef0123456789abcdef", Name: "sender", Cwd: "/tmp/bench/x"},
			To: "fedcba9876543210fedcba9876543210", Text: fmt.Sprintf("m%07d %0120d", i, 0), Delivery: DeliverySteer, SentAt: time.Now().UTC()}
	}
	data, _ := gojson.Marshal(msgs)
	return data
}

func BenchmarkDecodePushed(b *testing.B) {
	data := benchPush()
	var buf []Message
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var err error
		if buf, err = DecodePushed(data, buf[:0]); err != nil || len(buf) != 128 {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodePushedGoccy(b *testing.B) {
	data := benchPush()
	b.ReportAllocs()
	for b.Loop() {
		var msgs []Message
		if err := gojson.Unmarshal(data, &msgs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeSendReplyLean(b *testing.B) {
	data := AppendSendReply(nil, &SendReply{ID: "m0123456789abcdef0123", To: Session{ID: "fedcba9876543210fedcba9876543210", Name: "sink"}})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeSendReply(data); err != nil {
			b.Fatal(err)
		}
	}
}
