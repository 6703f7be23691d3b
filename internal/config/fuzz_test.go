package config

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParse: an accepted config is within the documented ranges, and
// writing it back as config.json (every key set; empty strings that the
// defaults leave empty and a null brokerArgs left out) parses to the same
// config with no warnings.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"askTimeoutMs": 5000, "status": "x"}`, `{"brokerArgs": ["-v"]}`, `[]`, `{"idleExitMs": -1}`,
		`{"confirmSend": null}`, "\x00", `{"askTimeoutMs": 1e3, "sendTimeoutMs": 1.5}`, `{"brokerArgs": []}`,
		`{"status": "", "shortcut": "ctrl+k", "brokerCommand": "/bin/x", "unknown": 1}`, `{"idleExitMs": 31536000000}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, _, err := Parse(data)
		if err != nil {
			return
		}
		// The duration rule (docs/cli.md): 1 ms to 7 days; 0 only where it
		// has a meaning (idleExitMs: run forever; forgetAfterMs: never;
		// askResumeGraceMs: no grace).
		const week = 7 * 24 * 3600 * 1000
		for _, v := range []struct {
			name   string
			ms     int64
			lowest int64
		}{{"askTimeoutMs", cfg.AskTimeoutMs, 1}, {"sendTimeoutMs", cfg.SendTimeoutMs, 1}, {"listTimeoutMs", cfg.ListTimeoutMs, 1},
			{"idleExitMs", cfg.IdleExitMs, 0}, {"forgetAfterMs", cfg.ForgetAfterMs, 0}, {"askResumeGraceMs", cfg.AskResumeGraceMs, 0}} {
			if v.ms < v.lowest || v.ms > week {
				t.Fatalf("accepted %s %d from %q", v.name, v.ms, data)
			}
		}
		doc := map[string]any{
			"confirmSend": cfg.ConfirmSend, "replyHint": cfg.ReplyHint, "askTimeoutMs": cfg.AskTimeoutMs,
			"sendTimeoutMs": cfg.SendTimeoutMs, "listTimeoutMs": cfg.ListTimeoutMs, "idleExitMs": cfg.IdleExitMs,
			"forgetAfterMs": cfg.ForgetAfterMs, "askResumeGraceMs": cfg.AskResumeGraceMs, "status": cfg.Status,
		}
		if cfg.BrokerCommand != "" {
			doc["brokerCommand"] = cfg.BrokerCommand
		}
		if cfg.Shortcut != "" {
			doc["shortcut"] = cfg.Shortcut
		}
		if cfg.BrokerArgs != nil {
			doc["brokerArgs"] = cfg.BrokerArgs
		}
		text, err := json.Marshal(doc)
		if err != nil {
			t.Fatalf("marshal %+v: %v", cfg, err)
		}
		again, warnings, err := Parse(text)
		if err != nil || len(warnings) != 0 || !reflect.DeepEqual(again, cfg) {
			t.Fatalf("round trip of %q through %s: %+v, warnings %v, %v; want %+v", data, text, again, warnings, err, cfg)
		}
	})
}
