// Package install writes (and removes) intercom's hooks and MCP server in
// the settings files of Claude Code, Codex and Gemini CLI, its plugin in
// OpenCode's config directory and its Pi package in Pi's agent directory.
// Changes merge into what is there, back the old file up first, are
// idempotent, and uninstall removes exactly the entries install added.
package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/atomicfile"
	"github.com/intercom-dev/intercom/internal/bounded"
	"github.com/intercom-dev/intercom/internal/hookexe"
	"github.com/intercom-dev/intercom/internal/hooks"
	"github.com/intercom-dev/intercom/internal/reservations"
)

// Plan is one settings file's change.
type Plan struct {
	Path   string
	Before []byte // nil when the file does not exist
	After  []byte // nil to delete nothing; equal to Before when unchanged
	// Owned files are wholly intercom's (the Pi package, OpenCode's
	// plugin): replaced or removed without a backup, and their directory
	// is removed with the last of them (only once empty).
	Owned bool
}

// Changed reports whether the plan writes anything.
func (p Plan) Changed() bool { return !bytes.Equal(p.Before, p.After) }

// Target says where a harness keeps its settings.
type Target struct {
	Harness string // claude, codex, gemini, pi or opencode
	Project string // project dir, or "" for the user's settings
	Home    string // the user's home directory
	// GeminiHome is GEMINI_CLI_HOME: where Gemini CLI keeps .gemini/
	// instead of Home ("" for Home).
	GeminiHome string
	// GeminiHold, when set, makes Gemini CLI's AfterAgent hook wait that
	// long for a waking message (`intercom hook gemini AfterAgent --hold`).
	GeminiHold time.Duration
	Command    string // absolute path of the intercom binary
	// HookCommand is the absolute path of intercom-hook (internal/hookexe)
	// when it sits beside Command: the hooks then run it, for a cheaper
	// process; "" runs `Command hook`.
	HookCommand string
	// ConfigDir is OpenCode's user config directory (OpenCodeDir); "" for
	// ~/.config/opencode.
	ConfigDir string
	// AgentDir is Pi's agent directory (PiAgentDir); pi only.
	AgentDir string
}

func (t Target) files() (hooksFile, mcpFile string) {
	switch {
	case t.Harness == "gemini":
		return t.geminiSettings(), t.geminiSettings()
	case t.Harness == "claude" && t.Project != "":
		return filepath.Join(t.Project, ".claude", "settings.json"), filepath.Join(t.Project, ".mcp.json")
	case t.Harness == "claude":
		return filepath.Join(t.Home, ".claude", "settings.json"), filepath.Join(t.Home, ".claude.json")
	case t.Project != "":
		return filepath.Join(t.Project, ".codex", "hooks.json"), filepath.Join(t.Project, ".codex", "config.toml")
	default:
		return filepath.Join(t.Home, ".codex", "hooks.json"), filepath.Join(t.Home, ".codex", "config.toml")
	}
}

func (t Target) hookCommand(event string) string {
	cmd := fmt.Sprintf("%s hook %s %s", quote(t.Command), t.Harness, event)
	if t.HookCommand != "" {
		cmd = fmt.Sprintf("%s %s %s", quote(t.HookCommand), t.Harness, event)
	}
	if t.holds(event) {
		cmd += " --hold " + t.GeminiHold.String()
	}
	return cmd
}

func quote(s string) string {
	if strings.ContainsAny(s, " \t'\"") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

// ours reports whether a hook command was written by install: one that
// runs `intercom hook HARNESS`, intercom-hook HARNESS, or the rewake wait.
func (t Target) ours(cmd string) bool {
	if hookexe.Is(HookBinary(cmd)) {
		return strings.Contains(cmd, " "+t.Harness+" ")
	}
	return strings.Contains(cmd, "intercom") && (strings.Contains(cmd, " hook "+t.Harness+" ") || strings.Contains(cmd, " wait --rewake"))
}

// hookEntry is the hook install writes for event ev.
func (t Target) hookEntry(ev string) map[string]any {
	h := map[string]any{"type": "command", "command": t.hookCommand(ev), "timeout": 30}
	if t.Harness == "gemini" {
		h["name"] = "intercom-" + ev
		h["timeout"] = GeminiHookTimeout.Milliseconds() // Gemini's are in milliseconds
		if t.holds(ev) {
			h["timeout"] = (t.GeminiHold + GeminiHookTimeout).Milliseconds()
		}
	}
	return h
}

// RewakeTimeout is how long the asyncRewake hook waits for a message (its
// hook timeout is a little longer, so it ends by itself).
const RewakeTimeout = 55 * 60

// rewakeHook is the Stop hook that wakes an idle Claude Code session: it
// runs in the background and exits 2 with the messages when one arrives.
func (t Target) rewakeHook() map[string]any {
	return map[string]any{"type": "command", "command": fmt.Sprintf("%s wait --rewake --timeout %ds", quote(t.Command), RewakeTimeout),
		"asyncRewake": true, "timeout": RewakeTimeout + 300}
}

// maxSettings is the largest settings file read.
const maxSettings = 8 << 20

func read(path string) ([]byte, map[string]any, error) {
	data, err := bounded.ReadFile(path, path, maxSettings)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, map[string]any{}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	doc := map[string]any{}
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, nil, fmt.Errorf("%s is not a JSON object: %w", path, err)
		}
	}
	return data, doc, nil
}

func encode(doc map[string]any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(doc)
	return b.Bytes()
}

// editHooks adds (or removes) our hook entries in a hooks document.
func (t Target) editHooks(doc map[string]any, add bool) {
	hooksMap, _ := doc["hooks"].(map[string]any)
	if hooksMap == nil {
		hooksMap = map[string]any{}
	}
	for _, ev := range append(hooks.HarnessEvents(t.Harness), t.preToolEvents()...) {
		groups, _ := hooksMap[ev].([]any)
		var kept []any
		for _, g := range groups {
			gm, ok := g.(map[string]any)
			if !ok {
				kept = append(kept, g)
				continue
			}
			list, _ := gm["hooks"].([]any)
			var rest []any
			for _, h := range list {
				hm, _ := h.(map[string]any)
				if cmd, _ := hm["command"].(string); hm != nil && t.ours(cmd) {
					continue
				}
				rest = append(rest, h)
			}
			if len(rest) == 0 && len(list) > 0 {
				continue // the group held only our hook
			}
			gm["hooks"] = rest
			kept = append(kept, gm)
		}
		if add {
			g := map[string]any{"hooks": []any{t.hookEntry(ev)}}
			if ev == hooks.PostToolUse && t.Harness == "claude" {
				g["matcher"] = "*"
			}
			if slices.Contains(t.preToolEvents(), ev) {
				g["matcher"] = reservations.Matcher(t.Harness)
			}
			kept = append(kept, g)
			if ev == hooks.Stop && t.Harness == "claude" {
				kept = append(kept, map[string]any{"hooks": []any{t.rewakeHook()}})
			}
		}
		if len(kept) == 0 {
			delete(hooksMap, ev)
		} else {
			hooksMap[ev] = kept
		}
	}
	if len(hooksMap) == 0 {
		delete(doc, "hooks")
	} else {
		doc["hooks"] = hooksMap
	}
}

// editMCPJSON adds (or removes) the intercom MCP server in a JSON document.
func (t Target) editMCPJSON(doc map[string]any, add bool) {
	servers, _ := doc["mcpServers"].(map[string]any)
	if servers == nil {
		servers = map[string]any{}
	}
	if add {
		servers["intercom"] = t.mcpEntry()
	} else if s, ok := servers["intercom"].(map[string]any); ok {
		if cmd, _ := s["command"].(string); strings.Contains(cmd, "intercom") {
			delete(servers, "intercom")
		}
	}
	if len(servers) == 0 {
		delete(doc, "mcpServers")
	} else {
		doc["mcpServers"] = servers
	}
}

// Plans computes the changes of install (add) or uninstall (!add).
func Plans(t Target, add bool) ([]Plan, error) {
	if t.Harness == "gemini" {
		return t.geminiPlans(add)
	}
	if t.Harness == "opencode" {
		return t.openCodePlans(add)
	}
	if t.Harness == "pi" {
		return t.piPlans(add)
	}
	if t.Harness == "git-hook" {
		return t.gitHookPlans(add)
	}
	hooksFile, mcpFile := t.files()
	var out []Plan
	before, doc, err := read(hooksFile)
	if err != nil {
		return nil, err
	}
	t.editHooks(doc, add)
	after := encode(doc)
	if len(doc) == 0 && (before == nil || !add) {
		after = nil // nothing left but what we added: remove the file
	}
	out = append(out, Plan{Path: hooksFile, Before: before, After: keepIfSame(before, after)})
	if strings.HasSuffix(mcpFile, ".toml") {
		plans, err := t.codexPlans(mcpFile, add)
		if err != nil {
			return nil, err
		}
		out = append(out, plans...)
	} else {
		before, doc, err := read(mcpFile)
		if err != nil {
			return nil, err
		}
		t.editMCPJSON(doc, add)
		after := encode(doc)
		if len(doc) == 0 && (before == nil || !add) {
			after = nil
		}
		out = append(out, Plan{Path: mcpFile, Before: before, After: keepIfSame(before, after)})
	}
	return out, nil
}

// keepIfSame returns before when after only reformats it (same JSON value).
func keepIfSame(before, after []byte) []byte {
	if before == nil || after == nil {
		return after
	}
	var a, b any
	if json.Unmarshal(before, &a) == nil && json.Unmarshal(after, &b) == nil {
		x, _ := json.Marshal(a)
		y, _ := json.Marshal(b)
		if bytes.Equal(x, y) {
			return before
		}
	}
	return after
}

// Apply writes a plan: the old file is copied to PATH.intercom-backup-<time>
// first; a file that would become empty is removed only if install created it.
func Apply(p Plan) (backup string, err error) {
	if !p.Changed() {
		return "", nil
	}
	if err := os.MkdirAll(filepath.Dir(p.Path), 0o755); err != nil {
		return "", err
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(p.Path); err == nil {
		mode = fi.Mode().Perm()
	}
	if p.Before != nil && !p.Owned {
		backup = fmt.Sprintf("%s.intercom-backup-%s", p.Path, time.Now().Format("20060102-150405.000"))
		if err := atomicfile.CreateFile(backup, p.Before, 0o600); err != nil {
			return "", fmt.Errorf("back up %s: %w", p.Path, err)
		}
	}
	if p.After == nil {
		if err := os.Remove(p.Path); err != nil {
			return backup, err
		}
		if p.Owned {
			_ = os.Remove(filepath.Dir(p.Path)) // only once empty
		}
		return backup, nil
	}
	if err := atomicfile.WriteFile(p.Path, p.After, mode); err != nil {
		return "", err
	}
	return backup, nil
}

// Diff renders a line diff of a plan (for --dry-run).
func Diff(p Plan) string {
	a := splitLines(p.Before)
	b := splitLines(p.After)
	// LCS table; settings files are small.
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", p.Path, p.Path)
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			out.WriteString("  " + a[i] + "\n")
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			out.WriteString("+ " + b[j] + "\n")
			j++
		default:
			out.WriteString("- " + a[i] + "\n")
			i++
		}
	}
	return out.String()
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}
