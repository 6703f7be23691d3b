package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/duration"
)

// TestNewKeysDefaults: the stall, attention and ask-resume keys have the
// documented defaults, and their accessors turn milliseconds into durations.
func TestNewKeysDefaults(t *testing.T) {
	t.Parallel()
	d := Defaults()
	if d.AskResumeGrace() != time.Minute || d.ForgetAfter() != 10*time.Minute ||
		d.HistoryMaxAge() != 30*24*time.Hour || d.HistoryMaxBytes != 512<<20 {
		t.Errorf("retention defaults: grace %v forget %v age %v bytes %d",
			d.AskResumeGrace(), d.ForgetAfter(), d.HistoryMaxAge(), d.HistoryMaxBytes)
	}
	if d.DigestBytes != 9000 || d.WakeBudget != 6 || d.WakeWindowMs != 600000 || d.WakeLoopRounds != 4 {
		t.Errorf("attention defaults %d %d %d %d", d.DigestBytes, d.WakeBudget, d.WakeWindowMs, d.WakeLoopRounds)
	}
	s, err := d.Stuck(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if want := (Stuck{BusyAfter: 10 * time.Minute, SteersAfter: 5 * time.Minute, StepAfter: 2 * time.Minute}); s != want {
		t.Errorf("default stall thresholds %+v, want %+v", s, want)
	}
	if d.Inbound != nil {
		t.Errorf("default inbound %v, want none", d.Inbound)
	}
}

// TestNewKeysParse: good values of every new key are applied, and 0 is
// accepted where it has a documented meaning.
func TestNewKeysParse(t *testing.T) {
	t.Parallel()
	cfg, warn, err := Parse([]byte(`{
		"askResumeGraceMs": 1500, "forgetAfterMs": 0, "historyMaxAgeMs": 0, "historyMaxBytes": 0,
		"stuckAfterMs": 2000, "stuckSteersAfterMs": 0, "stuckStepAfterMs": 750,
		"digestBytes": 1000, "wakeBudget": 0, "wakeWindowMs": 60000, "wakeLoopRounds": 2}`))
	if err != nil || len(warn) != 0 {
		t.Fatalf("Parse: %v %v", warn, err)
	}
	want := Defaults()
	want.AskResumeGraceMs, want.ForgetAfterMs, want.HistoryMaxAgeMs, want.HistoryMaxBytes = 1500, 0, 0, 0
	want.StuckAfterMs, want.StuckSteersAfterMs, want.StuckStepAfterMs = 2000, 0, 750
	want.DigestBytes, want.WakeBudget, want.WakeWindowMs, want.WakeLoopRounds = 1000, 0, 60000, 2
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("got %+v\nwant %+v", cfg, want)
	}
	if cfg.AskResumeGrace() != 1500*time.Millisecond || cfg.ForgetAfter() != 0 || cfg.HistoryMaxAge() != 0 {
		t.Errorf("accessors: %v %v %v", cfg.AskResumeGrace(), cfg.ForgetAfter(), cfg.HistoryMaxAge())
	}
	s, err := cfg.Stuck(func(string) string { return "" })
	if err != nil || s != (Stuck{BusyAfter: 2 * time.Second, StepAfter: 750 * time.Millisecond}) {
		t.Errorf("Stuck = %+v, %v", s, err)
	}
}

// TestNewKeysBadValuesNameTheKey: each new key refuses a wrong type, null,
// a value below its least and (for durations) fractions and over 7 days,
// with an ErrInvalid error naming the key and saying what is wanted.
func TestNewKeysBadValuesNameTheKey(t *testing.T) {
	t.Parallel()
	cases := []struct{ doc, key, says string }{
		{`{"askResumeGraceMs": -1}`, "askResumeGraceMs", "negative"},
		{`{"askResumeGraceMs": "1m"}`, "askResumeGraceMs", "milliseconds"},
		{`{"stuckAfterMs": 0.5}`, "stuckAfterMs", "whole number"},
		{`{"stuckAfterMs": 604800001}`, "stuckAfterMs", "7 days"},
		{`{"stuckSteersAfterMs": null}`, "stuckSteersAfterMs", "milliseconds"},
		{`{"stuckSteersAfterMs": -10}`, "stuckSteersAfterMs", "negative"},
		{`{"stuckStepAfterMs": true}`, "stuckStepAfterMs", "milliseconds"},
		{`{"digestBytes": 999}`, "digestBytes", "1000 or more"},
		{`{"digestBytes": 1500.5}`, "digestBytes", "whole number"},
		{`{"digestBytes": "9000"}`, "digestBytes", "whole number"},
		{`{"wakeBudget": -1}`, "wakeBudget", "0 or more"},
		{`{"wakeBudget": null}`, "wakeBudget", "0 or more"},
		{`{"wakeWindowMs": 0}`, "wakeWindowMs", "0 is not allowed"},
		{`{"wakeWindowMs": -1}`, "wakeWindowMs", "negative"},
		{`{"wakeLoopRounds": -3}`, "wakeLoopRounds", "0 or more"},
		{`{"wakeLoopRounds": [4]}`, "wakeLoopRounds", "whole number"},
		{`{"historyMaxBytes": -1}`, "historyMaxBytes", "bytes"},
		{`{"historyMaxBytes": "big"}`, "historyMaxBytes", "bytes"},
		{`{"historyMaxAgeMs": -1}`, "historyMaxAgeMs", "negative"},
		{`{"forgetAfterMs": 1.25}`, "forgetAfterMs", "whole number"},
		{`{"shortcut": "  "}`, "shortcut", "must not be empty"},
	}
	for _, c := range cases {
		_, _, err := Parse([]byte(c.doc))
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%s) err %v, want ErrInvalid", c.doc, err)
			continue
		}
		if !strings.Contains(err.Error(), `"`+c.key+`"`) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Parse(%s) error %q, want it to name %q and say %q", c.doc, err, c.key, c.says)
		}
	}
}

// TestStuckEnvironmentOverrides: each variable overrides its threshold
// ("0" turns it off), the others keep config.json's; a malformed value is
// an error naming the variable.
func TestStuckEnvironmentOverrides(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cfg := Defaults()
	s, err := cfg.Stuck(env(map[string]string{EnvStuckAfter: "500ms", EnvStuckSteersAfter: "0"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Stuck{BusyAfter: 500 * time.Millisecond, SteersAfter: 0, StepAfter: 2 * time.Minute}); s != want {
		t.Errorf("Stuck = %+v, want %+v", s, want)
	}
	s, err = cfg.Stuck(env(map[string]string{EnvStuckStepAfter: " 3s "}))
	if err != nil || s.StepAfter != 3*time.Second || s.BusyAfter != 10*time.Minute {
		t.Errorf("Stuck with step override = %+v, %v", s, err)
	}
	for name, v := range map[string]string{EnvStuckAfter: "soon", EnvStuckSteersAfter: "-1s", EnvStuckStepAfter: "200h"} {
		s, err := cfg.Stuck(env(map[string]string{name: v}))
		if !errors.Is(err, duration.ErrInvalid) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: err %v, want duration.ErrInvalid naming the variable", name, v, err)
		}
		if s != (Stuck{}) {
			t.Errorf("%s=%s: thresholds %+v returned with the error", name, v, s)
		}
	}
}

// TestInboundRuleForms: a mode string, an object (mode omitted or empty:
// accept), sender exceptions matched by name or id, an id key for the
// session; "" never matches.
func TestInboundRuleForms(t *testing.T) {
	t.Parallel()
	cfg, _, err := Parse([]byte(`{"inbound":{
		"a": "refuse",
		"b": {"senders": {"boss": "hold"}},
		"c": {"mode": "", "senders": {"id-x": "refuse"}},
		"sess-42": "hold",
		"d": null}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]InboundRule{
		"a":       {Mode: InboundRefuse},
		"b":       {Mode: InboundAccept, Senders: map[string]string{"boss": "hold"}},
		"c":       {Mode: InboundAccept, Senders: map[string]string{"id-x": "refuse"}},
		"sess-42": {Mode: InboundHold},
		"d":       {Mode: InboundAccept},
	}
	if !reflect.DeepEqual(cfg.Inbound, want) {
		t.Fatalf("inbound %+v\nwant %+v", cfg.Inbound, want)
	}
	for _, c := range []struct {
		name, id, sender, senderID, want string
		named                            bool
	}{
		{"a", "", "anyone", "", InboundRefuse, false},
		{"b", "", "boss", "id-boss", InboundHold, true},
		{"b", "", "", "boss", InboundHold, true},
		{"c", "", "x", "id-x", InboundRefuse, true},
		{"c", "", "y", "id-y", InboundAccept, false},
		{"", "sess-42", "y", "", InboundHold, false},
		{"renamed", "sess-42", "y", "", InboundHold, false},
		{"", "", "y", "", InboundAccept, false}, // no "*": accept
	} {
		mode, named := cfg.InboundFor(c.name, c.id).ModeFor(c.sender, c.senderID)
		if mode != c.want || named != c.named {
			t.Errorf("%q/%q from %q/%q: %s (named %t), want %s (%t)", c.name, c.id, c.sender, c.senderID, mode, named, c.want, c.named)
		}
	}
	// An empty sender name does not match an exception keyed "".
	r := InboundRule{Mode: InboundHold, Senders: map[string]string{"": InboundAccept}}
	if mode, named := r.ModeFor("", ""); mode != InboundHold || named {
		t.Errorf("empty sender: %s (named %t), want hold (false)", mode, named)
	}
	if mode, _ := (InboundRule{}).ModeFor("x"); mode != InboundAccept {
		t.Errorf("zero rule mode %s, want accept", mode)
	}
}

// TestInboundBadValuesNameKeyAndSession: every refusal wraps ErrInvalid
// and names "inbound", the session and (for an exception) the sender.
func TestInboundBadValuesNameKeyAndSession(t *testing.T) {
	t.Parallel()
	cases := []struct{ doc, says string }{
		{`{"inbound": null}`, "must be an object"},
		{`{"inbound": "hold"}`, "must be an object"},
		{`{"inbound": {"a": 5}}`, `session "a": must be a mode`},
		{`{"inbound": {"a": {"mode": "hold", "extra": 1, "senders": []}}}`, `session "a": must be a mode`},
		{`{"inbound": {"a": {"mode": 7}}}`, `session "a": must be a mode`},
		{`{"inbound": {"a": "HOLD"}}`, `session "a": mode "HOLD" must be accept, hold or refuse`},
		{`{"inbound": {"*": {"mode": "block"}}}`, `session "*": mode "block"`},
		{`{"inbound": {"z": {"senders": {"bob": ""}}}}`, `session "z": sender "bob": mode ""`},
	}
	for _, c := range cases {
		cfg, _, err := Parse([]byte(c.doc))
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%s) err %v, want ErrInvalid", c.doc, err)
			continue
		}
		if !strings.Contains(err.Error(), `"inbound"`) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Parse(%s) error %q, want it to name \"inbound\" and say %q", c.doc, err, c.says)
		}
		if cfg.Inbound != nil {
			t.Errorf("Parse(%s) returned rules %v with its error", c.doc, cfg.Inbound)
		}
	}
}

// TestLoadRefusesOversizedAndUnreadable: a file over MaxBytes is invalid
// (not read); a path that cannot be read is an error that is not
// ErrInvalid and names the path.
func TestLoadRefusesOversizedAndUnreadable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "config.json")
	data := []byte(`{"status": "` + strings.Repeat("x", MaxBytes) + `"}`)
	if err := os.WriteFile(big, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(big); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("max %d", MaxBytes)) {
		t.Errorf("Load(oversized) err %v, want ErrInvalid saying the limit", err)
	}
	if _, _, err := Load(dir); err == nil || errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), dir) {
		t.Errorf("Load(directory) err %v, want a read error naming %s", err, dir)
	}
}
