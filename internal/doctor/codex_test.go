package doctor

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/brokertest"
	"github.com/intercom-dev/intercom/internal/buildinfo"
)

// serveCodexAppServer answers as `codex app-server` does the two requests
// doctor makes: hooks/list lists the hooks of $HOME/.codex/hooks.json,
// keyed "FILE:event:group:index" as Codex keys them, each with the trust
// status in $DOCTOR_TEST_TRUST.
func serveCodexAppServer() int {
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req struct {
			ID     *int   `json:"id"`
			Method string `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		_ = out.Encode(map[string]any{"method": "some/notification"})
		switch req.Method {
		case "initialize":
			_ = out.Encode(map[string]any{"id": *req.ID, "result": map[string]any{}})
		case "hooks/list":
			file := filepath.Join(os.Getenv("HOME"), ".codex", "hooks.json")
			data, _ := os.ReadFile(file)
			var doc struct {
				Hooks map[string][]struct {
					Hooks []struct {
						Command string `json:"command"`
					} `json:"hooks"`
				} `json:"hooks"`
			}
			_ = json.Unmarshal(data, &doc)
			var hooks []map[string]any
			for ev, groups := range doc.Hooks {
				for g, group := range groups {
					for i, h := range group.Hooks {
						hooks = append(hooks, map[string]any{"key": fmt.Sprintf("%s:%s:%d:%d", file, ev, g, i), "command": h.Command,
							"eventName": ev, "trustStatus": os.Getenv("DOCTOR_TEST_TRUST")})
					}
				}
			}
			_ = out.Encode(map[string]any{"id": *req.ID, "result": map[string]any{"data": []any{map[string]any{"hooks": hooks}}}})
		default:
			_ = out.Encode(map[string]any{"id": *req.ID, "error": map[string]any{"message": "unknown method"}})
		}
	}
	return 0
}

// Codex's own answer on trust decides the hooks row.
func TestCodexHookTrust(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ trust, status, detail string }{
		{"trusted", OK, "5 intercom hooks trusted"},
		{"untrusted", Fail, "5 of 5 intercom hooks not trusted"},
		{"modified", Fail, "Stop modified"},
	} {
		t.Run(tc.trust, func(t *testing.T) {
			t.Parallel()
			m := newMachine(t)
			m.script(filepath.Join(m.bin, "codex"), fmt.Sprintf(`[ "$1" = --version ] && { echo 'codex-cli 9.9.9'; exit 0; }
DOCTOR_TEST_TRUST=%s %s=codex-app-server exec '%s' "$@"`, tc.trust, roleEnv, exe))
			m.install("codex", m.intercom)
			r := m.run("codex")
			if c := row(t, r, "codex", "user", "hooks"); c.Status != tc.status || !strings.Contains(c.Detail, tc.detail) {
				t.Errorf("hooks: %s %q, want %s with %q", c.Status, c.Detail, tc.status, tc.detail)
			}
		})
	}
}

// The broker row: not running is no failure (doctor does not start one);
// a running broker answers with its version. Not parallel: the in-process
// broker narrows the process's umask while it binds its socket, which
// would change the mode of files other tests write meanwhile.
func TestBrokerCheck(t *testing.T) {
	o := &Options{IntercomHome: filepath.Join(t.TempDir(), "none"), Version: buildinfo.Version(), Timeout: 10 * time.Second}
	if c := brokerCheck(t.Context(), o); c.Status != None || !strings.Contains(c.Detail, "not running") {
		t.Errorf("no broker: %+v", c)
	}
	if _, err := os.Stat(o.IntercomHome); !os.IsNotExist(err) {
		t.Errorf("doctor created %s (%v)", o.IntercomHome, err)
	}
	o.IntercomHome = brokertest.Start(t)
	if c := brokerCheck(t.Context(), o); c.Status != OK || c.Detail != "answers; version "+buildinfo.Version() || c.Path == "" {
		t.Errorf("running broker: %+v", c)
	}
	o.Version = "v0.0.1-other"
	if c := brokerCheck(t.Context(), o); c.Status != Warn || !strings.Contains(c.Detail, "this intercom is v0.0.1-other") || c.Fix == "" {
		t.Errorf("broker of another version: %+v", c)
	}
}
