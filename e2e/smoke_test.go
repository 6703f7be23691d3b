package e2e

import (
	"testing"
	"time"
)

func TestSmokeAttachListSend(t *testing.T) {
	t.Parallel()
	h := newH(t)
	a, ev := h.Attach("--name", "alpha")
	if ev["name"] != "alpha" {
		t.Fatalf("got name %v, want alpha", ev["name"])
	}
	rows := h.Sessions()
	if r := Row(rows, "alpha"); r == nil || r["state"] != "idle" {
		t.Fatalf("alpha row %v", r)
	}
	h.OK("send", "alpha", "hello")
	m := a.Event(10 * time.Second)
	if m["event"] != "message" || m["text"] != "hello" {
		t.Fatalf("got %v, want message hello", m)
	}
}
