package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/paths"
)

func TestDefaults(t *testing.T) {
	t.Parallel()
	d := Defaults()
	if d.AskTimeout() != 120*time.Second || d.SendTimeout() != 8*time.Second ||
		d.ListTimeout() != 5*time.Second || d.IdleExit() != 5*time.Second {
		t.Fatalf("default timeouts %+v", d)
	}
	if !d.ReplyHint || d.ConfirmSend {
		t.Fatalf("default flags %+v", d)
	}
}

func TestLoadMissingFileGivesDefaults(t *testing.T) {
	t.Parallel()
	cfg, warn, err := Load(filepath.Join(t.TempDir(), "config.json"))
	if err != nil || len(warn) != 0 {
		t.Fatalf("Load missing: %v %v", warn, err)
	}
	if !reflect.DeepEqual(cfg, Defaults()) {
		t.Fatalf("got %+v, want defaults", cfg)
	}
}

func TestLoadReadsFile(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(`{"idleExitMs": 500, "askTimeoutMs": 2000}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.IdleExit() != 500*time.Millisecond || cfg.AskTimeout() != 2*time.Second {
		t.Fatalf("got %+v", cfg)
	}
}

func TestParseValues(t *testing.T) {
	t.Parallel()
	cfg, warn, err := Parse([]byte(`{
		"confirmSend": true, "replyHint": false, "askTimeoutMs": 1000,
		"sendTimeoutMs": 1, "listTimeoutMs": 250, "idleExitMs": 0,
		"status": "", "brokerCommand": "/usr/bin/b", "brokerArgs": ["--x"]}`))
	if err != nil || len(warn) != 0 {
		t.Fatalf("Parse: %v %v", warn, err)
	}
	want := Defaults()
	want.ConfirmSend, want.ReplyHint = true, false
	want.AskTimeoutMs, want.SendTimeoutMs, want.ListTimeoutMs, want.IdleExitMs = 1000, 1, 250, 0
	want.BrokerCommand, want.BrokerArgs = "/usr/bin/b", []string{"--x"}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("got %+v\nwant %+v", cfg, want)
	}
}

func TestParseBadValuesNameTheKey(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		`{"askTimeoutMs": "x"}`:         "askTimeoutMs",
		`{"askTimeoutMs": 604800001}`:   "askTimeoutMs", // over 7 days
		`{"askTimeoutMs": 1500.5}`:      "askTimeoutMs",
		`{"sendTimeoutMs": 0}`:          "sendTimeoutMs",
		`{"listTimeoutMs": -5}`:         "listTimeoutMs",
		`{"idleExitMs": -1}`:            "idleExitMs",
		`{"idleExitMs": null}`:          "idleExitMs",
		`{"confirmSend": "yes"}`:        "confirmSend",
		`{"replyHint": 1}`:              "replyHint",
		`{"status": 5}`:                 "status",
		`{"status": "a\u0001b"}`:        "status",
		`{"brokerCommand": ""}`:         "brokerCommand",
		`{"brokerArgs": "--x"}`:         "brokerArgs",
		`{"brokerArgs": [1]}`:           "brokerArgs",
		`{"idleExitMs": 1e20}`:          "idleExitMs",
		`{"zzz": 1, "askTimeoutMs": 0}`: "askTimeoutMs",
	}
	for doc, key := range cases {
		_, _, err := Parse([]byte(doc))
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%s) err %v, want ErrInvalid", doc, err)
			continue
		}
		if !strings.Contains(err.Error(), key) {
			t.Errorf("Parse(%s) error %q does not name %s", doc, err, key)
		}
	}
}

func TestParseNotAnObject(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{`{`, `[]`, `"x"`, ``, `{"a":1}x`} {
		if _, _, err := Parse([]byte(doc)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) err %v, want ErrInvalid", doc, err)
		}
	}
}

func TestParseUnknownKeysWarn(t *testing.T) {
	t.Parallel()
	cfg, warn, err := Parse([]byte(`{"bogusKey": 1, "another": "x", "idleExitMs": 700}`))
	if err != nil {
		t.Fatalf("unknown keys must not fail: %v", err)
	}
	if len(warn) != 2 || !strings.Contains(warn[0], "another") || !strings.Contains(warn[1], "bogusKey") {
		t.Fatalf("warnings %q, want one per unknown key, sorted", warn)
	}
	if cfg.IdleExitMs != 700 {
		t.Fatalf("known key not applied next to unknown ones: %+v", cfg)
	}
}

func TestForHomeChecksAChosenHomeAndLoadsItsConfig(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "ic")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"idleExitMs": 700, "bogus": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var warned []string
	l, cfg, err := ForHome(home, "/tmp/x.sock", func(w string) { warned = append(warned, w) })
	if err != nil || l.Home != home || l.Socket != "/tmp/x.sock" || cfg.IdleExit() != 700*time.Millisecond {
		t.Fatalf("ForHome = %+v, %+v, %v", l, cfg, err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "bogus") {
		t.Errorf("warnings %q, want the unknown key named once", warned)
	}
	missing := filepath.Join(t.TempDir(), "no", "such", "home")
	if _, _, err := ForHome(missing, "", func(string) {}); !errors.Is(err, paths.ErrNoParent) {
		t.Errorf("ForHome(%s): %v, want ErrNoParent", missing, err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"idleExitMs": "soon"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ForHome(home, "", func(string) {}); !errors.Is(err, ErrInvalid) {
		t.Errorf("ForHome with a bad value: %v, want ErrInvalid", err)
	}
}
