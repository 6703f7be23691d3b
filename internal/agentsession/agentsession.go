// Package agentsession gives every intercom process that acts for one agent
// — the harness's hooks, its MCP server and the commands the agent runs in
// its own shell tool — one intercom session, without --session.
//
// The join key is the harness process instance: its pid and start stamp on
// this boot (package proctree). Hooks and the MCP server find the harness as
// their nearest ancestor that is not a shell (Claude Code runs hooks through
// /bin/sh -c and MCP servers directly). The first of them to act writes a
// binding, $INTERCOM_HOME/agents/<pid>-<start>.json, naming the session;
// every other intercom command walks up its own ancestors and acts as the
// nearest bound one (an agent's shell commands descend from its harness).
// Claude Code also gives all three CLAUDE_CODE_SESSION_ID, the session id
// its hooks see, so they agree on the id even before any binding exists.
package agentsession

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/intercom-dev/intercom/internal/ascii"
	"github.com/intercom-dev/intercom/internal/atomicfile"
	"github.com/intercom-dev/intercom/internal/jsonfields"
	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/internal/plainfile"
	"github.com/intercom-dev/intercom/internal/proctree"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Binding names the intercom session of one harness process.
type Binding struct {
	Session string `json:"session"`
	Name    string `json:"name"`
	// Harness is claude, codex or gemini ("" when not known).
	Harness string `json:"harness,omitempty"`
	// Seen lists the harness's own session ids its hooks reported, latest
	// last (Claude Code's /clear starts a new one in the same process).
	Seen []string `json:"harness_sessions,omitempty"`
	// Hooks is true once a hook has run for this harness: the hooks then
	// deliver messages at tool boundaries.
	Hooks bool   `json:"hooks,omitempty"`
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
	Boot  string `json:"boot"`
}

// Proc is the harness process of b.
func (b Binding) Proc() proctree.Proc { return proctree.Proc{Pid: b.Pid, Start: b.Start} }

// Agents is the agents directory of one intercom home: each harness
// process's binding to its session, the delivery locks, the rewake records.
type Agents struct{ dir string }

// Open returns the agents directory of home.
func Open(home string) Agents { return Agents{dir: filepath.Join(home, "agents")} }

// Dir is where bindings and delivery locks live.
func (s Agents) Dir() string { return s.dir }

func (s Agents) file(p proctree.Proc) string { return filepath.Join(s.dir, p.Key()+".json") }

// Load reads the binding of harness p (ok false when there is none, or it
// was written on another boot).
func (s Agents) Load(p proctree.Proc) (Binding, bool) {
	data, err := plainfile.ReadFile(s.file(p))
	if err != nil {
		return Binding{}, false
	}
	b, ok := decodeBinding(data)
	if !ok || b.Session == "" {
		return Binding{}, false
	}
	if boot, err := proctree.Boot(); err != nil || boot != b.Boot {
		return Binding{}, false
	}
	return b, true
}

// decodeBinding reads a binding file as json.Unmarshal does, without its
// reflection (jsonfields) when it can.
func decodeBinding(data []byte) (Binding, bool) {
	if b, ok := decodeBindingFields(data); ok {
		return b, true
	}
	var b Binding
	return b, json.Unmarshal(data, &b) == nil
}

// decodeBindingFields reads a binding with jsonfields alone; false when it
// leaves data to encoding/json.
func decodeBindingFields(data []byte) (Binding, bool) {
	var b Binding
	ok := jsonfields.Decode(data,
		jsonfields.Field{Key: "session", Into: &b.Session},
		jsonfields.Field{Key: "name", Into: &b.Name},
		jsonfields.Field{Key: "harness", Into: &b.Harness},
		jsonfields.Field{Key: "harness_sessions", Into: &b.Seen},
		jsonfields.Field{Key: "hooks", Into: &b.Hooks},
		jsonfields.Field{Key: "pid", Into: &b.Pid},
		jsonfields.Field{Key: "start", Into: &b.Start},
		jsonfields.Field{Key: "boot", Into: &b.Boot})
	return b, ok
}

// Save writes b atomically, then removes bindings of harnesses that ended.
func (s Agents) Save(b Binding) error {
	if err := paths.EnsurePrivateDir(s.dir); err != nil {
		return err
	}
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	path := s.file(b.Proc())
	if err := atomicfile.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write agent binding: %w", err)
	}
	s.prune()
	return nil
}

var digits = ascii.Of("0-9")

// bindingFile reads a binding's file name, <pid>-<start>.json, as the
// process it binds (ok false for any other name).
func bindingFile(name string) (p proctree.Proc, ok bool) {
	pid, start, ok := strings.Cut(strings.TrimSuffix(name, ".json"), "-")
	if !ok || !strings.HasSuffix(name, ".json") || pid == "" || start == "" || !digits.All(pid) || !digits.All(start) {
		return proctree.Proc{}, false
	}
	p.Pid, _ = strconv.Atoi(pid)
	p.Start, _ = strconv.ParseUint(start, 10, 64)
	return p, true
}

// prune removes the bindings (and delivery locks' neighbours) of harness
// processes that no longer run.
func (s Agents) prune() {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		p, ok := bindingFile(e.Name())
		if ok && !proctree.Alive(p) {
			os.Remove(filepath.Join(s.dir, e.Name()))
			os.Remove(filepath.Join(s.dir, strings.TrimSuffix(e.Name(), ".json")+".lock"))
		}
	}
}

// Nearest returns the binding of the nearest bound ancestor of this
// process (INTERCOM_HARNESS_PID, when set, is looked at first).
func (s Agents) Nearest() (Binding, bool) {
	if _, err := os.Stat(s.dir); errors.Is(err, fs.ErrNotExist) {
		return Binding{}, false
	}
	if p, ok := overridden(); ok {
		if b, ok := s.Load(p); ok {
			return b, true
		}
	}
	for _, p := range proctree.Ancestors(os.Getpid(), 64) {
		if b, ok := s.Load(p); ok {
			return b, true
		}
	}
	return Binding{}, false
}

// StillBound reports whether harness p is alive and still bound to session.
func (s Agents) StillBound(p proctree.Proc, session string) bool {
	if !proctree.Alive(p) {
		return false
	}
	b, ok := s.Load(p)
	return !ok || b.Session == session // a missing binding file is not a rebinding
}

// BoundElsewhere returns a live harness process other than p bound to
// session: a harness resumed the session while p's holder still held it
// (`codex exec resume` after `codex exec`), so the holder keeps holding for
// it rather than detaching the session under it.
func (s Agents) BoundElsewhere(p proctree.Proc, session string) (proctree.Proc, bool) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return proctree.Proc{}, false
	}
	for _, e := range ents {
		q, ok := bindingFile(e.Name())
		if !ok || (q.Pid == p.Pid && q.Start == p.Start) || !proctree.Alive(q) {
			continue
		}
		if b, ok := s.Load(q); ok && b.Session == session {
			return q, true
		}
	}
	return proctree.Proc{}, false
}

// shells are skipped when looking for the harness above a hook: harnesses
// run hook commands through one.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "env"}

// Harness returns the harness process that runs this one: the nearest
// ancestor that is not a shell. INTERCOM_HARNESS_PID names it explicitly
// (for harnesses that start intercom through another program).
func Harness() (proctree.Proc, error) {
	if p, ok := overridden(); ok {
		return p, nil
	}
	for _, p := range proctree.Ancestors(os.Getpid(), 16) {
		if !slices.Contains(shells, p.Comm) {
			return p, nil
		}
	}
	return proctree.Proc{}, errors.New("find the harness process: no ancestor outside a shell")
}

func overridden() (proctree.Proc, bool) {
	pid, err := strconv.Atoi(os.Getenv("INTERCOM_HARNESS_PID"))
	if err != nil || pid <= 1 {
		return proctree.Proc{}, false
	}
	p, err := proctree.Get(pid)
	return p, err == nil
}

// ClaudeSessionEnv is the variable Claude Code sets for its hooks, MCP
// servers and shell commands: its session id.
const ClaudeSessionEnv = "CLAUDE_CODE_SESSION_ID"

// SessionID maps a harness's own session id to a stable intercom session id
// (cc-<id> for Claude Code, cx-<id> for Codex, gm-<id> for Gemini CLI,
// oc-<id> for OpenCode), the same across resumes.
func SessionID(harness, id string) string {
	prefix := map[string]string{"claude": "cc-", "codex": "cx-", "gemini": "gm-", "opencode": "oc-"}[harness]
	s := prefix + ascii.ReplaceOthers(id, wire.IDBytes, "-")
	if len(s) > 80 {
		s = s[:80]
	}
	for len(s) < 8 {
		s += "0"
	}
	return s
}

var nameBytes = ascii.Of("a-z0-9_-")

// DefaultName is the session name when INTERCOM_NAME is unset:
// <harness>-<directory>.
func DefaultName(harness, cwd string) string {
	if harness == "" {
		harness = "agent"
	}
	dir := strings.Trim(ascii.ReplaceOthers(strings.ToLower(filepath.Base(cwd)), nameBytes, "-"), "-")
	if dir == "" || dir == "." {
		return harness
	}
	name := harness + "-" + dir
	if len(name) > 64 {
		name = name[:64]
	}
	return name
}
