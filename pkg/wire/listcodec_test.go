package wire

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// listReplyOf is the reply a broker writes for rows.
func listReplyOf(rows []Session) []byte {
	out := []byte(`{"result":{"sessions":[`)
	for i := range rows {
		if i > 0 {
			out = append(out, ',')
		}
		out = AppendSession(out, &rows[i])
	}
	return append(out, "]}}"...)
}

func randomSession(r *rand.Rand) Session {
	texts := []string{"", "alice", "p00042", "naïve café", `quo"te`, `back\slash`, "<b>&amp;</b>", "tab\there", "nl\n", "\x00\x1f", "bad\xffutf8", "emoji 🚀", "\u2028line", "/home/u/some project"}
	pick := func() string { return texts[r.IntN(len(texts))] }
	t := time.Date(2026, 12, 1, 11, r.IntN(60), r.IntN(60), r.IntN(1e9), time.UTC)
	s := Session{
		ID: fmt.Sprintf("%032x", r.Uint64()), Name: pick(), Target: pick(), Cwd: pick(), Project: pick(),
		Model: pick(), Status: pick(), State: pick(), AcceptsAsks: r.IntN(2) == 0, PendingAsks: r.IntN(3) - 1,
		Connected: r.IntN(2) == 0, Ephemeral: r.IntN(4) == 0, Self: r.IntN(4) == 0, Queued: r.IntN(5) * 1000, Host: pick(),
	}
	if r.IntN(2) == 0 {
		s.LastSeen = t
	}
	if r.IntN(2) == 0 {
		a := t.Add(-time.Minute).In(time.FixedZone("", 3600))
		s.LastIntercomActivity = &a
	}
	return s
}

// What encoding/json makes of rows: the full encoding read back (invalid
// UTF-8 becomes U+FFFD, times lose their zone's name).
func viaEncodingJSON(t *testing.T, rows []Session) Reply[ListReply] {
	t.Helper()
	full, err := json.Marshal(Reply[ListReply]{Result: &ListReply{Sessions: rows}})
	if err != nil {
		t.Fatal(err)
	}
	var want Reply[ListReply]
	if err := json.Unmarshal(full, &want); err != nil {
		t.Fatal(err)
	}
	return want
}

// The compact rows read back, by encoding/json and by DecodeListReply, into
// what the full encoding reads back into.
func TestListReplyRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 200 {
		rows := make([]Session, n%7)
		for i := range rows {
			rows[i] = randomSession(r)
		}
		want := viaEncodingJSON(t, rows)
		data := listReplyOf(rows)
		var std Reply[ListReply]
		if err := json.Unmarshal(data, &std); err != nil {
			t.Fatalf("encoding/json cannot read %s: %v", data, err)
		}
		if !reflect.DeepEqual(std, want) {
			t.Fatalf("encoding/json reads %s as\n%+v\nwant\n%+v", data, *std.Result, *want.Result)
		}
		got, err := DecodeListReply(data)
		if err != nil {
			t.Fatalf("DecodeListReply(%s): %v", data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("DecodeListReply(%s) =\n%+v\nwant\n%+v", data, *got.Result, *want.Result)
		}
	}
}

// Rows at their zero values are left out entirely.
func TestAppendSessionLeavesOutZeros(t *testing.T) {
	if got := string(AppendSession(nil, &Session{ID: "a1"})); got != `{"id":"a1"}` {
		t.Fatalf("got %s", got)
	}
	got := string(AppendSession(nil, &Session{ID: "a1", Name: "x<y", Connected: true, Queued: 2}))
	if want := `{"id":"a1","name":"x\u003cy","connected":true,"queued":2}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// For any valid JSON, DecodeListReply agrees with json.Unmarshal: both
// fail, or both give the same reply.
func FuzzDecodeListReply(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	f.Add(listReplyOf([]Session{randomSession(r), randomSession(r)}))
	f.Add([]byte(`{"error":{"code":"bad_request","message":"no"}}`))
	f.Add([]byte(`{"result":{"sessions":[{"ID":"x","queued":1.0}]}}`))
	f.Add([]byte(`{"result":{"sessions":[null,{"last_intercom_activity":null,"name":"\ud800"}]}}`))
	f.Add([]byte(`{"result":{"sessions":[{"name":"\ud83d\ude80 \u00e9\u003c\/\t","cwd":"\udfff"}]}}`))
	f.Add([]byte(`{"result":{"sessions":[{"pending_asks":-0,"queued":01,"last_seen":"2026-12-01T11:00:00+01:00"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := DecodeListReply(data)
		if !json.Valid(data) {
			return
		}
		var want Reply[ListReply]
		werr := json.Unmarshal(data, &want)
		if (err == nil) != (werr == nil) {
			t.Fatalf("DecodeListReply(%q) error %v, encoding/json %v", data, err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("DecodeListReply(%q) = %+v, encoding/json %+v", data, got, want)
		}
	})
}

// Replies off the broker's beaten path: each is read as encoding/json
// reads it (or fails as it fails).
func TestDecodeListReplyAgreesOnOddInputs(t *testing.T) {
	for _, in := range []string{
		`{"result":{"sessions":[{"id":"a","model":null,"last_intercom_activity":null,"connected":null}]}}`,
		`{"result":{"sessions":[{"id":"a","last_intercom_activity":"2026-12-01T11:00:00Z"},{"id":"b","last_intercom_activity":null}]}}`,
		`{"result":{"sessions":[{"id":"a","nonsense":null}]}}`,
		`{"result":{"sessions":[{"id":"a","future_field":1}]}}`,
		`{"result":{"sessions":[{"ID":"a","Name":"b"}]}}`,
		`{"result":{"sessions":[{"id":7}]}}`,
		`{"result":{"sessions":[{"queued":"7"}]}}`,
		`{"result":{"sessions":[{"queued":1.5}]}}`,
		`{"result":{"sessions":[{"last_seen":"yesterday"}]}}`,
		`{"result":{"sessions":[{"last_seen":7}]}}`,
		`{"result":{"sessions":[{"name":"\ud800"}]}}`,
		`{"result":{"sessions":[null]}}`,
		`{"result":{"sessions":[[]]}}`,
		`{"result":{"sessions":{}}}`,
		`{"result":{"sessions":[],"more":1}}`,
		`{"result":[]}`,
		`{"result":null}`,
		`{"result":{"sessions":[]},"error":{"code":"x","message":"y"}}`,
		`{"error":{"code":"not_found","message":"no"}}`,
		`[]`,
		`{}`,
	} {
		var want Reply[ListReply]
		werr := json.Unmarshal([]byte(in), &want)
		got, err := DecodeListReply([]byte(in))
		if (err == nil) != (werr == nil) || (err == nil && !reflect.DeepEqual(got, want)) {
			t.Errorf("DecodeListReply(%s) = %+v, %v; encoding/json %+v, %v", in, got, err, want, werr)
		}
	}
	// A time encoding/json cannot write (year 10000) is written as the
	// zero time rather than breaking the reply.
	far := Session{ID: "a", LastSeen: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	var back Session
	if err := json.Unmarshal(AppendSession(nil, &far), &back); err != nil || !back.LastSeen.IsZero() {
		t.Fatalf("year 10000: %+v, %v", back, err)
	}
}
