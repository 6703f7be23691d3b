package config

import (
	"errors"
	"testing"
)

// TestInboundParsesModesAndExceptions: a mode string or an object with
// sender exceptions; "*" covers sessions without a rule; a bad mode is an
// error naming the key.
func TestInboundParsesModesAndExceptions(t *testing.T) {
	cfg, warnings, err := Parse([]byte(`{"inbound":{"reviewer":"hold","lead":{"mode":"refuse","senders":{"planner":"accept"}},"*":"hold"}}`))
	if err != nil || len(warnings) != 0 {
		t.Fatalf("parse: %v %v", err, warnings)
	}
	for _, c := range []struct {
		session, sender, want string
		named                 bool
	}{
		{"reviewer", "anyone", InboundHold, false},
		{"lead", "planner", InboundAccept, true},
		{"lead", "worker", InboundRefuse, false},
		{"other", "worker", InboundHold, false},
	} {
		mode, named := cfg.InboundFor(c.session, "").ModeFor(c.sender, "id-"+c.sender)
		if mode != c.want || named != c.named {
			t.Errorf("%s from %s: %s (named %t), want %s (%t)", c.session, c.sender, mode, named, c.want, c.named)
		}
	}
	if mode, _ := Defaults().InboundFor("x", "").ModeFor("y"); mode != InboundAccept {
		t.Fatalf("default mode %s, want accept", mode)
	}
	for _, bad := range []string{`{"inbound":{"a":"block"}}`, `{"inbound":{"a":{"mode":"hold","senders":{"b":"maybe"}}}}`, `{"inbound":[]}`} {
		if _, _, err := Parse([]byte(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", bad, err)
		}
	}
}
