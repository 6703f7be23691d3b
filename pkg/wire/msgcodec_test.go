package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"
)

func randomMessage(r *rand.Rand) Message {
	pick := func() string { return oddTexts[r.IntN(len(oddTexts))] }
	m := Message{ID: fmt.Sprintf("%026x", r.Uint64()), Seq: r.Uint64() >> uint(r.IntN(64)), From: Peer{ID: pick(), Name: pick(), Cwd: pick()},
		To: pick(), Text: pick(), Delivery: pick(), ExpectsReply: r.IntN(2) == 0, ReplyTo: pick(), Thread: pick(), QueueMode: pick(),
		SentAt: time.Date(2026, 12, 1, 11, r.IntN(60), r.IntN(60), r.IntN(1e9), time.FixedZone("", 3600*(r.IntN(3)-1))),
		Topic:  pick(), Event: pick(), Resource: pick(), Ownership: pick(), FromPerson: r.IntN(2) == 0, WakeHeld: pick()}
	if r.IntN(5) == 0 {
		m.Attachments = []Attachment{{Type: "file", Name: pick(), Content: pick()}}
	}
	return m
}

// A pushed message, as the broker writes it (goccy/go-json) and as
// encoding/json writes it, is decoded as encoding/json decodes it.
func TestDecodeMessageAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for range 400 {
		m := randomMessage(r)
		byBroker, err := gojson.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		byStd, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, data := range [][]byte{byBroker, byStd} {
			var want Message
			if err := json.Unmarshal(data, &want); err != nil {
				t.Fatalf("encoding/json cannot read %s: %v", data, err)
			}
			got, err := DecodeMessage(data)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("DecodeMessage(%s) =\n%+v, %v\nwant\n%+v", data, got, err, want)
			}
		}
	}
}

// Messages off the broker's path are read as encoding/json reads them, or
// fail as it fails.
func TestDecodeMessageAgreesOnOddInputs(t *testing.T) {
	for _, in := range []string{
		`null`,
		`{}`,
		`{"id":"a","from":null,"seq":null,"sent_at":null,"expects_reply":null}`,
		`{"id":"a","from":{"id":"b"},"from":{"name":"c"}}`,
		`{"ID":"a"}`,
		`{"id":"a","seq":1.5}`,
		`{"id":"a","seq":-1}`,
		`{"id":"a","seq":18446744073709551616}`,
		`{"id":"a","sent_at":"yesterday"}`,
		`{"id":"a","sent_at":"2026-12-01T11:00:00\u002b01:00"}`,
		`{"id":"a","text":"\ud83d\ude80"}`,
		`{"id":"a","text":"x\u0000\u00e9\/"}`,
		`{"id":"a","text":"raw` + "\t" + `tab"}`,
		`{"id":"a","from":{"id":"b","host":"h"}}`,
		`{"id":"a","attachments":[{"type":"file","name":"n","content":"c"}]}`,
		`{"id":"a",}`,
		`{"id":"a"} {}`,
		`{"id" : "a" , "seq" : 7 }`,
		`[]`,
		`{"id":"a\b\f\r\u00zz"}`,
		`{"id":"a\x"}`,
		`{"id":"a\`,
		`{"id":"a\u00`,
		`{"id":"é\n` + "\xff" + `"}`,
		`{"i\u0064":"a"}`,
		`{"id` + "\x01" + `":"a"}`,
		`{"id":"a" "seq":1}`,
		`{"id":"a",,"seq":1}`,
		`{"id"`,
		`{"id":"a","sent_at":7}`,
		`{"id":"a","sent_at":"2026`,
		`{"id":"a","sent_at":"2026\u002d12-01T11:00:00Z"}`,
		`{"id":"a","from":{"id":"b"`,
		`{"id":"a","from":7}`,
		`{"id":"a","from":{"id":null,"name":null,"cwd":null}}`,
		`{"id":"a","expects_reply":"yes"}`,
		`{"id":"a","text":"` + "\x01" + `"}`,
		`{"id":"a","text":"`,
	} {
		got, err := DecodeMessage([]byte(in))
		var want Message
		werr := json.Unmarshal([]byte(in), &want)
		if (err == nil) != (werr == nil) || err == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("DecodeMessage(%s) = %+v, %v; encoding/json %+v, %v", in, got, err, want, werr)
		}
	}
}

// A push decodes into its messages in order, appended to the buffer given
// (reused); one the scanner leaves to encoding/json is read whole by it.
func TestDecodePushed(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	msgs := make([]Message, 5)
	for i := range msgs {
		msgs[i] = randomMessage(r)
		msgs[i].Attachments = nil
	}
	buf := make([]Message, 0, 2)
	check := func(what string, v any, want []Message) {
		t.Helper()
		data, _ := gojson.Marshal(v)
		var std []Message
		for _, m := range want { // what encoding/json reads of each
			one, _ := json.Marshal(m)
			var back Message
			_ = json.Unmarshal(one, &back)
			std = append(std, back)
		}
		got, err := DecodePushed(data, buf[:0])
		if err != nil || len(got) != len(std) || len(std) > 0 && !reflect.DeepEqual(got, std) {
			t.Fatalf("%s: %+v, %v\nwant %+v", what, got, err, std)
		}
		buf = got
	}
	check("single push", msgs[0], msgs[:1])
	check("batch", msgs, msgs)
	check("batch again, into the same buffer", msgs[1:3], msgs[1:3])
	msgs[2].Attachments = []Attachment{{Type: "file", Name: "a", Content: "b"}}
	check("batch with an attachment", msgs, msgs)
	check("empty batch", []Message{}, nil)
	if _, err := DecodePushed([]byte(`[{"id":"a"},`), nil); err == nil {
		t.Fatal("a truncated batch decoded")
	}
	if got, err := DecodePushed([]byte(`{"id":"b"}`), []Message{{ID: "a"}}); err != nil || len(got) != 2 || got[1].ID != "b" {
		t.Fatalf("appended %+v, %v", got, err)
	}
}

// For any valid JSON, DecodeMessage agrees with json.Unmarshal, and
// DecodePushed reads an array as json.Unmarshal does.
func FuzzDecodeMessage(f *testing.F) {
	r := rand.New(rand.NewPCG(15, 16))
	m := randomMessage(r)
	data, _ := gojson.Marshal(m)
	f.Add(data)
	batch, _ := gojson.Marshal([]Message{m, randomMessage(r)})
	f.Add(batch)
	f.Add([]byte(`{"id":"a\"\\\/\b\f\n\r\t\u0041","from":{"id":null},"seq":0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := DecodeMessage(data)
		pushed, perr := DecodePushed(data, nil)
		if !json.Valid(data) {
			return
		}
		var want Message
		werr := json.Unmarshal(data, &want)
		if (err == nil) != (werr == nil) || err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("DecodeMessage(%q) = %+v, %v; encoding/json %+v, %v", data, got, err, want, werr)
		}
		var all []Message
		if bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("[")) && json.Unmarshal(data, &all) == nil {
			if perr != nil || len(pushed) != len(all) || len(all) > 0 && !reflect.DeepEqual(pushed, all) {
				t.Fatalf("DecodePushed(%q) = %+v, %v; want %+v", data, pushed, perr, all)
			}
		}
	})
}

// The broker's times are read as time.Time's UnmarshalText reads them, and
// any other form is left to it.
func TestUTCMoment(t *testing.T) {
	for _, in := range []string{
		"2026-12-01T11:00:00Z", "2026-12-01T11:00:00.5Z", "2026-12-01T11:00:00.123456789Z", "2026-12-01T11:00:00.000000001Z",
		"2024-02-29T23:59:59Z", "2026-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z",
		"2026-12-00T00:00:00Z", "2026-12-01T24:00:00Z", "2026-12-01T11:60:00Z", "2026-12-01T11:00:60Z", "2026-12-01T11:00:00.Z",
		"2026-12-01T11:00:00.1234567890Z", "2026-12-01T11:00:00+01:00", "2026-12-01t11:00:00Z", "2026-12-01T11:00:00z",
		"0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z", "2026-1x-01T00:00:00Z", "2026-12-01T11:00:00,5Z",
	} {
		var want time.Time
		werr := want.UnmarshalText([]byte(in))
		got, ok := utcMoment([]byte(in))
		if ok && (werr != nil || !reflect.DeepEqual(got, want)) {
			t.Errorf("utcMoment(%s) = %v, UnmarshalText %v, %v", in, got, want, werr)
		}
	}
	for _, in := range []string{"2026-12-01T11:00:00Z", "2026-12-01T11:00:00.5Z", "2026-12-01T11:00:00.123456789Z", "2024-02-29T23:59:59Z", "9999-12-31T23:59:59.999999999Z"} {
		if _, ok := utcMoment([]byte(in)); !ok {
			t.Errorf("utcMoment(%s) left to UnmarshalText", in)
		}
	}
}

// AppendMessage writes what json.Marshal writes, byte for byte, and so
// does AppendMessages for a batch.
func TestAppendMessageAsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	var batch []*Message
	for i := range 400 {
		m := randomMessage(r)
		if i%7 == 0 {
			m = Message{ID: m.ID} // the zero fields a message leaves out
		}
		if i%5 == 0 {
			m.Attachments = append(m.Attachments, Attachment{Type: "snippet", Name: "n", Language: "go", Path: "/p", Content: "<x>\n"})
		}
		checkAppendMessage(t, &m)
		batch = append(batch, &m)
	}
	want, err := json.Marshal(batch)
	if err != nil {
		t.Fatal(err)
	}
	if got := AppendMessages(nil, batch); !bytes.Equal(got, want) {
		t.Fatalf("AppendMessages =\n%s\nwant\n%s", got, want)
	}
}

func checkAppendMessage(t *testing.T, m *Message) {
	t.Helper()
	want, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if got := AppendMessage(nil, m); !bytes.Equal(got, want) {
		t.Fatalf("AppendMessage =\n%s\nwant\n%s", got, want)
	}
}

func FuzzAppendMessage(f *testing.F) {
	f.Add("id", uint64(1), "from", "cwd", "text\n<b>", "\xff", int64(1_796_000_000), 3600, true)
	f.Fuzz(func(t *testing.T, id string, seq uint64, from, cwd, text, other string, sec int64, offset int, flag bool) {
		m := Message{ID: id, Seq: seq, From: Peer{ID: from, Name: other, Cwd: cwd}, To: other, Text: text, Delivery: other,
			ExpectsReply: flag, ReplyTo: other, Thread: text, SentAt: time.Unix(sec%(1<<34), 0).In(time.FixedZone("", offset%(20*3600))),
			Topic: other, FromPerson: flag, WakeHeld: cwd}
		if flag {
			m.Attachments = []Attachment{{Type: other, Name: text, Path: cwd, Content: text}}
		}
		checkAppendMessage(t, &m)
	})
}
