package wire

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"
)

var oddTexts = []string{"", "alice", "naïve café", `quo"te`, `back\slash`, "<b>&amp;</b>", "tab\there", "nl\n", "\x00\x1f", "bad\xffutf8", "emoji 🚀", "\u2028line", "/home/u/some project"}

func randomSendRequest(r *rand.Rand) SendRequest {
	pick := func() string { return oddTexts[r.IntN(len(oddTexts))] }
	req := SendRequest{From: pick(), To: pick(), Text: pick(), Delivery: pick(), DeliverySet: r.IntN(2) == 0, ExpectsReply: r.IntN(2) == 0,
		ReplyTo: pick(), Thread: pick(), QueueMode: pick(), ClientMsgID: pick(), WaitSubject: pick(), TimeoutMs: int64(r.IntN(3)) * 1500,
		Lean: r.IntN(2) == 0, BatchReply: r.IntN(2) == 0}
	if r.IntN(3) == 0 {
		req.Attachments = []Attachment{{Type: "file", Name: pick(), Content: pick()}}
	}
	return req
}

// What encoding/json reads back of v's own encoding (invalid UTF-8 becomes
// U+FFFD).
func roundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// A request written by AppendSendRequest reads back, by encoding/json, as
// its encoding/json encoding does.
func TestAppendSendRequestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 300 {
		req := randomSendRequest(r)
		data := AppendSendRequest(nil, &req)
		var got SendRequest
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("encoding/json cannot read %s: %v", data, err)
		}
		if want := roundTrip(t, req); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s reads as\n%+v\nwant\n%+v", data, got, want)
		}
	}
}

func randomSendReply(r *rand.Rand) SendReply {
	return SendReply{ID: fmt.Sprintf("%026x", r.Uint64()), To: randomSession(r), Offline: r.IntN(2) == 0, Duplicate: r.IntN(2) == 0,
		PeerBusy: r.IntN(2) == 0, Queued: r.IntN(2) == 0, RemoteStored: r.IntN(2) == 0, Held: r.IntN(2) == 0,
		WakeHeld: []string{"", WakeHeldBudget, WakeHeldLoop}[r.IntN(3)]}
}

// Every shape of send reply is decoded as encoding/json decodes it: the
// broker's own (AppendSendReply), lean or whole, and the one a broker before
// them wrote (goccy/go-json by reflection, the whole row with its zero
// fields).
func TestDecodeSendReplyShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 300 {
		rep := randomSendReply(r)
		if i%3 == 0 {
			rep.To = LeanRecipient(rep.To)
		}
		old, err := gojson.Marshal(Reply[SendReply]{Result: &rep})
		if err != nil {
			t.Fatal(err)
		}
		for _, data := range [][]byte{AppendSendReply(nil, &rep), old} {
			var want Reply[SendReply]
			if err := json.Unmarshal(data, &want); err != nil {
				t.Fatalf("encoding/json cannot read %s: %v", data, err)
			}
			got, err := DecodeSendReply(data)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("DecodeSendReply(%s) = %+v, %v\nwant %+v", data, got.Result, err, want.Result)
			}
		}
		if want := roundTrip(t, rep); !reflect.DeepEqual(*mustDecodeSend(t, AppendSendReply(nil, &rep)).Result, want) {
			t.Fatalf("AppendSendReply of %+v does not read back", rep)
		}
	}
}

func mustDecodeSend(t *testing.T, data []byte) Reply[SendReply] {
	t.Helper()
	out, err := DecodeSendReply(data)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A lean reply is small: the recipient's id and name, none of its other
// fields.
func TestLeanSendReply(t *testing.T) {
	rep := SendReply{ID: "m1", To: LeanRecipient(Session{ID: "s1", Name: "sink", Cwd: "/w", LastSeen: time.Now(), Connected: true})}
	got := string(AppendSendReply(nil, &rep))
	want := `{"result":{"id":"m1","to":{"id":"s1","name":"sink"},"offline":false,"duplicate":false,"peer_busy":false,"queued":false,"remote_stored":false}}`
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	out := mustDecodeSend(t, []byte(got))
	if out.Result.To != (Session{ID: "s1", Name: "sink"}) || out.Result.ID != "m1" {
		t.Fatalf("decoded %+v", out.Result)
	}
}

// Error replies and replies off the broker's path are read as encoding/json
// reads them, or fail as it fails.
func TestDecodeSendReplyAgreesOnOddInputs(t *testing.T) {
	for _, in := range []string{
		`{"error":{"code":"not_found","message":"no session sink"}}`,
		`{"result":null}`,
		`{}`,
		`{"result":{"id":"a","to":null,"offline":null}}`,
		`{"result":{"ID":"a"}}`,
		`{"result":{"id":"a","to":{"id":"b","name":"c","cwd":"/w","last_seen":"2026-12-01T11:00:00Z"}}}`,
		`{"result":{"id":"a","future":1}}`,
		`{"result":{"id":7}}`,
		`{"result":{"id":"\ud800"}}`,
		`{"result":{"id":"a\u00e9\n"},"result":{"wake_held":"x"}}`,
		` {"result" : {"id" : "a" , "held" : true } } `,
		`{"result":{"id":"a"}} x`,
		`[]`,
		`{"result":{"id":"a","to":{"id":"b","cwd":"/w"},"offline":null,"held":true,"wake_held":"x","queued":true,"remote_stored":true,"peer_busy":true,"duplicate":true}}`,
		`{"result":{"id":"a","to":{"id":"b","cwd":"/w"},"nonsense":null}}`,
		`{"result":{"id":"a","to":{"id":"b","cwd":"/w"},"held":"no"}}`,
		`{"result":{"id":"a","to":7}}`,
		`{"result":{"id":"a","to":{"id":"b","name":7}}}`,
		`{"result":{"id":"a","to":{"id":"b"`,
		`{"result":{"id":"a"},"error":null}`,
		`{"result":7}`,
	} {
		got, err := DecodeSendReply([]byte(in))
		var want Reply[SendReply]
		werr := json.Unmarshal([]byte(in), &want)
		if (err == nil) != (werr == nil) || err == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("DecodeSendReply(%s) = %+v, %v; encoding/json %+v, %v", in, got, err, want, werr)
		}
	}
}

// For any valid JSON, DecodeSendReply agrees with json.Unmarshal.
func FuzzDecodeSendReply(f *testing.F) {
	r := rand.New(rand.NewPCG(9, 10))
	rep := randomSendReply(r)
	f.Add(AppendSendReply(nil, &rep))
	lean := SendReply{ID: "x", To: Session{ID: "y", Name: "z\u00e9"}}
	f.Add(AppendSendReply(nil, &lean))
	f.Add([]byte(`{"error":{"code":"bad_request","message":"no"}}`))
	f.Add([]byte(`{"result":{"id":"a\"\\\/\b\f\n\r\t\u0041","to":{"id":null}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := DecodeSendReply(data)
		if !json.Valid(data) {
			return
		}
		var want Reply[SendReply]
		werr := json.Unmarshal(data, &want)
		if (err == nil) != (werr == nil) || err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("DecodeSendReply(%q) = %+v, %v; encoding/json %+v, %v", data, got, err, want, werr)
		}
	})
}

// A batch of send replies splits back into its tokens and replies, in order.
func TestBatchedReplyLines(t *testing.T) {
	var batch []byte
	replies := map[string]string{}
	for i := range 5 {
		rep := SendReply{ID: fmt.Sprintf("m%d", i), To: Session{ID: "s", Name: "line\nbreak"}}
		data := AppendSendReply(nil, &rep)
		tok := fmt.Sprintf("%x", i+10)
		replies[tok] = string(data)
		batch = AppendBatchedReply(batch, tok, data)
	}
	if n := strings.Count(string(batch), "\n"); n != 5 {
		t.Fatalf("%d lines in %q, want 5", n, batch)
	}
	for i := 0; ; i++ {
		tok, reply, rest, ok := NextBatchedReply(batch)
		if !ok {
			if i != 5 {
				t.Fatalf("%d replies split off, want 5", i)
			}
			break
		}
		if tok != fmt.Sprintf("%x", i+10) || string(reply) != replies[tok] {
			t.Fatalf("line %d: %q %s", i, tok, reply)
		}
		if mustDecodeSend(t, reply).Result.To.Name != "line\nbreak" {
			t.Fatalf("line %d decoded wrong", i)
		}
		batch = rest
	}
	if _, _, _, ok := NextBatchedReply([]byte("no-space\n")); ok {
		t.Fatal("a line without a token and a reply was split")
	}
}
