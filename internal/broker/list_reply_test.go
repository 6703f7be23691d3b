package broker

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// The list reply keeps the bytes of unchanged rows: after every kind of
// change the reply still says what the broker holds now, read by
// encoding/json as by the client's decoder.
func TestListReplyFollowsChanges(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	a := w.attach("alpha")
	b := w.attach("bravo")
	check := func(step string, req wire.ListRequest) []wire.Session {
		t.Helper()
		m, err := w.c.Conn().Request(wire.SubjList, mustMarshal(t, req), bounded)
		if err != nil {
			t.Fatalf("%s: list: %v", step, err)
		}
		var std wire.Reply[wire.ListReply]
		if err := json.Unmarshal(m.Data, &std); err != nil || std.Result == nil {
			t.Fatalf("%s: reply %s: %v", step, m.Data, err)
		}
		fast, err := wire.DecodeListReply(m.Data)
		if err != nil || !reflect.DeepEqual(fast, std) {
			t.Fatalf("%s: DecodeListReply = %+v, %v; encoding/json %+v", step, fast.Result, err, std.Result)
		}
		want, err := w.b.list(req)
		if err != nil {
			t.Fatal(err)
		}
		wantJSON := wire.Reply[wire.ListReply]{Result: want}
		if got := std.Result.Sessions; !reflect.DeepEqual(mustMarshal(t, std), mustMarshal(t, wantJSON)) {
			t.Fatalf("%s: listed %+v, the broker holds %+v", step, got, want.Sessions)
		}
		return std.Result.Sessions
	}
	all := wire.ListRequest{Scope: "all", Self: a.ID()}
	rowOf := func(rows []wire.Session, id string) wire.Session {
		for _, r := range rows {
			if r.ID == id {
				return r
			}
		}
		t.Fatalf("no row %s in %+v", id, rows)
		return wire.Session{}
	}
	rows := check("start", all)
	if !rowOf(rows, a.ID()).Self || rowOf(rows, b.ID()).Self {
		t.Fatalf("self: %+v", rows)
	}
	rows = check("seen by bravo", wire.ListRequest{Scope: "all", Self: b.ID()})
	if rowOf(rows, a.ID()).Self || !rowOf(rows, b.ID()).Self {
		t.Fatalf("self as bravo: %+v", rows)
	}
	if err := b.SetState(ctx, "tool:bash", nil); err != nil {
		t.Fatal(err)
	}
	if r := rowOf(check("bravo busy", all), b.ID()); r.State != wire.StateBusy || r.Status != "tool:bash" {
		t.Fatalf("bravo after set-state: %+v", r)
	}
	if _, err := w.c.Send(ctx, wire.SendRequest{From: a.ID(), To: b.ID(), Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	recv(t, b) // pushed, not acked: queued
	if r := rowOf(check("mail queued", all), b.ID()); r.Queued != 1 || r.LastIntercomActivity == nil {
		t.Fatalf("bravo with mail: %+v", r)
	}
	if err := b.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	if rows := check("bravo gone", all); len(rows) != 1 {
		t.Fatalf("after detach: %+v", rows)
	}
	all.IncludeDisconnected = true
	if r := rowOf(check("bravo disconnected", all), b.ID()); r.Connected || r.State != wire.StateDisconnected {
		t.Fatalf("bravo detached: %+v", r)
	}
	z := w.attach("zulu", func(o *intercom.AttachOptions) { o.Cwd = "/elsewhere" })
	if rows := check("project scope", wire.ListRequest{Self: a.ID(), Project: "/proj"}); len(rows) != 1 {
		t.Fatalf("project scope: %+v", rows)
	}
	if r := rowOf(check("zulu", all), z.ID()); r.Project != "/elsewhere" || r.Name != "zulu" {
		t.Fatalf("zulu: %+v", r)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The list keeps the order of the last list while nothing changed; after
// each change it is still self first, then connected sessions, by name
// (case folded), then id.
func TestListOrderFollowsChanges(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	names := func(req wire.ListRequest) []string {
		t.Helper()
		res, err := w.b.list(req)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range res.Sessions {
			out = append(out, r.Name)
		}
		return out
	}
	want := func(step string, req wire.ListRequest, expect ...string) {
		t.Helper()
		for range 2 { // sorted, then from the kept order
			if got := names(req); !slices.Equal(got, expect) {
				t.Fatalf("%s: listed %v, want %v", step, got, expect)
			}
		}
	}
	all := wire.ListRequest{Scope: "all", IncludeDisconnected: true}
	w.attach("Bravo")
	a := w.attach("alpha")
	c := w.attach("charlie")
	want("start", all, "alpha", "Bravo", "charlie")
	if err := a.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	want("alpha detached", all, "Bravo", "charlie", "alpha")
	want("connected only", wire.ListRequest{Scope: "all"}, "Bravo", "charlie")
	want("as charlie", wire.ListRequest{Scope: "all", Self: c.ID(), IncludeDisconnected: true}, "charlie", "Bravo", "alpha")
	w.attach("aardvark")
	want("aardvark attached", all, "aardvark", "Bravo", "charlie", "alpha")
	if _, err := w.c.Attach(ctx, intercom.AttachOptions{Name: "alpha", ResumeID: a.ID(), Cwd: "/proj"}); err != nil {
		t.Fatal(err)
	}
	want("alpha back", all, "aardvark", "alpha", "Bravo", "charlie")
}

// A list for one id answers that session's row, the same as in the full
// list, or none.
func TestListOneID(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.attach("alpha")
	b := w.attach("bravo")
	full, err := w.b.list(wire.ListRequest{Scope: "all", IncludeDisconnected: true})
	if err != nil {
		t.Fatal(err)
	}
	one, err := w.b.list(wire.ListRequest{Scope: "all", IncludeDisconnected: true, ID: b.ID()})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(full.Sessions, func(r wire.Session) bool { return r.ID == b.ID() })
	if len(one.Sessions) != 1 || i < 0 || !reflect.DeepEqual(one.Sessions[0], full.Sessions[i]) {
		t.Fatalf("list of %s: %+v, want its row of %+v", b.ID(), one.Sessions, full.Sessions)
	}
	none, err := w.b.list(wire.ListRequest{Scope: "all", IncludeDisconnected: true, ID: "no-such-session"})
	if err != nil || len(none.Sessions) != 0 {
		t.Fatalf("list of an unknown id: %+v, %v", none, err)
	}
}
