package wire

import (
	"testing"
	"time"

	gjson "github.com/goccy/go-json"
)

func benchMsg() []byte {
	m := Message{ID: "01JXYZABCDEF0123456789ABCD", Seq: 12345, From: Peer{ID: "0123456789abcdef0123456789abcdef", Name: "sender", Cwd: "/tmp/bench/x"},
		To: "fedcba9876543210fedcba9876543210", Text: "m000123 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", Delivery: "steer", SentAt: time.Now().UTC()}
	b, _ := gjson.Marshal(m)
	return b
}

func BenchmarkDecodeMessageFast(b *testing.B) {
	data := benchMsg()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeMessage(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeMessageGoccy(b *testing.B) {
	data := benchMsg()
	b.ReportAllocs()
	for b.Loop() {
		var m Message
		if err := gjson.Unmarshal(data, &m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeSendReplyLean(b *testing.B) {
	data := AppendSendReply(nil, &SendReply{ID: "01JXYZABCDEF0123456789ABCD", To: Session{ID: "fedcba9876543210fedcba9876543210", Name: "sink"}})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeSendReply(data); err != nil {
			b.Fatal(err)
		}
	}
}
