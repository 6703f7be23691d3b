package config

import "testing"

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `{"askTimeoutMs": 5000, "status": "x"}`, `{"brokerArgs": ["-v"]}`, `[]`, `{"idleExitMs": -1}`, `{"confirmSend": null}`, "\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, _, err := Parse(data)
		if err == nil && (cfg.AskTimeoutMs < 1000 || cfg.SendTimeoutMs < 1 || cfg.IdleExitMs < 0) {
			t.Fatalf("accepted out-of-range config %+v from %q", cfg, data)
		}
	})
}
