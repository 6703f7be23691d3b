package install

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/intercom-dev/intercom/internal/bounded"
	"github.com/intercom-dev/intercom/internal/hooks"
)

// Installed is what Inspect finds of install's entries in one harness's
// settings (user or project scope), read with the same rules install
// writes them by.
type Installed struct {
	HooksFile, MCPFile     string
	HooksExists, MCPExists bool
	// HooksErr and MCPErr say why a file that exists cannot be read or
	// parsed (nil when it parses or does not exist).
	HooksErr, MCPErr error
	// Hooks maps each event of hooks.Events to the intercom hook commands
	// found for it (an event without one is absent).
	Hooks map[string][]string
	// PreTool are the intercom commands of the harness's pre-tool hook
	// (PreToolUse; Gemini CLI: BeforeTool), which enforces reservations.
	PreTool []string
	// Rewake reports Claude Code's asyncRewake Stop hook (intercom wait
	// --rewake with asyncRewake true).
	Rewake bool
	// HooksDisabled is Claude Code's disableAllHooks in the hooks file.
	HooksDisabled bool
	// MCP is the "intercom" MCP server entry, nil when there is none.
	MCP *MCPServer
	// HooksFeature is Codex's [features] hooks (nil when absent or not
	// Codex); LegacyHooksFeature its deprecated alias codex_hooks.
	HooksFeature, LegacyHooksFeature *bool
}

// MCPServer is an MCP server entry as a harness will start it.
type MCPServer struct {
	Command string
	Args    []string
	Env     map[string]string // set for the server
	EnvVars []string          // Codex: passed through from Codex's environment
}

// Any reports whether anything install writes is present.
func (in Installed) Any() bool {
	return len(in.Hooks) > 0 || in.MCP != nil || in.Rewake
}

// MissingHooks lists the events of hooks.Events without an intercom hook.
func (in Installed) MissingHooks() []string {
	var out []string
	for _, ev := range hooks.Events {
		if len(in.Hooks[ev]) == 0 {
			out = append(out, ev)
		}
	}
	return out
}

// Files are the settings files of t: hooks, then MCP (the same file list
// install's Plans writes, without Codex's install record).
func (t Target) Files() (hooksFile, mcpFile string) { return t.files() }

// Ours reports whether a hook command is one install wrote for t.Harness.
func (t Target) Ours(command string) bool { return t.ours(command) }

// Inspect reads t's settings files and reports install's entries in them.
// It never fails: a file that cannot be read or parsed is reported in
// HooksErr or MCPErr.
func Inspect(t Target) Installed {
	var in Installed
	in.HooksFile, in.MCPFile = t.files()
	in.HooksExists, in.HooksErr = exists(in.HooksFile)
	if in.HooksExists && in.HooksErr == nil {
		if _, doc, err := read(in.HooksFile); err != nil {
			in.HooksErr = err
		} else {
			in.Hooks, in.Rewake = t.ourHooks(doc)
			in.PreTool = t.preToolHooks(doc)
			in.PreTool = t.preToolHooks(doc)
			in.HooksDisabled = doc["disableAllHooks"] == true
		}
	}
	in.MCPExists, in.MCPErr = exists(in.MCPFile)
	if !in.MCPExists || in.MCPErr != nil {
		return in
	}
	if strings.HasSuffix(in.MCPFile, ".toml") {
		in.inspectCodexConfig()
		return in
	}
	if _, doc, err := read(in.MCPFile); err != nil {
		in.MCPErr = err
	} else {
		servers, _ := doc["mcpServers"].(map[string]any)
		in.MCP = DecodeMCPServer(servers["intercom"])
	}
	return in
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return true, err
}

// ourHooks collects the intercom hook commands of a hooks document.
func (t Target) ourHooks(doc map[string]any) (map[string][]string, bool) {
	found := map[string][]string{}
	rewake := false
	hooksMap, _ := doc["hooks"].(map[string]any)
	names := hooks.HarnessEvents(t.Harness) // in the order of hooks.Events
	for i, ev := range hooks.Events {
		groups, _ := hooksMap[names[i]].([]any)
		for _, g := range groups {
			gm, _ := g.(map[string]any)
			list, _ := gm["hooks"].([]any)
			for _, h := range list {
				hm, _ := h.(map[string]any)
				cmd, _ := hm["command"].(string)
				switch {
				case !t.ours(cmd):
				case strings.Contains(cmd, " wait --rewake"):
					rewake = rewake || hm["asyncRewake"] == true
				default:
					found[ev] = append(found[ev], cmd)
				}
			}
		}
	}
	return found, rewake
}

// preToolHooks collects the intercom commands of the pre-tool events of a
// hooks document.
func (t Target) preToolHooks(doc map[string]any) []string {
	var found []string
	hooksMap, _ := doc["hooks"].(map[string]any)
	for _, ev := range t.preToolEvents() {
		groups, _ := hooksMap[ev].([]any)
		for _, g := range groups {
			gm, _ := g.(map[string]any)
			list, _ := gm["hooks"].([]any)
			for _, h := range list {
				hm, _ := h.(map[string]any)
				if cmd, _ := hm["command"].(string); t.ours(cmd) {
					found = append(found, cmd)
				}
			}
		}
	}
	return found
}

// inspectCodexConfig reads config.toml: the hooks feature and the MCP entry.
func (in *Installed) inspectCodexConfig() {
	data, err := bounded.ReadFile(in.MCPFile, in.MCPFile, maxSettings)
	if err != nil {
		in.MCPErr = err
		return
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		in.MCPErr = fmt.Errorf("%s is not valid TOML: %w", in.MCPFile, err)
		return
	}
	features, _ := doc["features"].(map[string]any)
	in.HooksFeature = boolOf(features["hooks"])
	in.LegacyHooksFeature = boolOf(features["codex_hooks"])
	servers, _ := doc["mcp_servers"].(map[string]any)
	in.MCP = DecodeMCPServer(servers["intercom"])
}

func boolOf(v any) *bool {
	b, ok := v.(bool)
	if !ok {
		return nil
	}
	return &b
}

// DecodeMCPServer decodes an MCP server entry as Claude Code, Codex and
// Gemini CLI write it ({command, args, env, env_vars}); nil when v is not
// one.
func DecodeMCPServer(v any) *MCPServer {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	s := &MCPServer{Env: map[string]string{}}
	s.Command, _ = m["command"].(string)
	s.Args = stringsOf(m["args"])
	s.EnvVars = stringsOf(m["env_vars"])
	env, _ := m["env"].(map[string]any)
	for k, v := range env {
		if str, ok := v.(string); ok {
			s.Env[k] = str
		}
	}
	return s
}

func stringsOf(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// HookBinary is the program a hook command install wrote runs: its first
// word, unquoted as quote quoted it.
func HookBinary(command string) string {
	command = strings.TrimSpace(command)
	if strings.HasPrefix(command, "'") {
		var b strings.Builder
		for rest := command[1:]; rest != ""; {
			i := strings.IndexByte(rest, '\'')
			if i < 0 {
				return b.String() + rest
			}
			b.WriteString(rest[:i])
			rest = rest[i+1:]
			if !strings.HasPrefix(rest, `\''`) {
				return b.String()
			}
			b.WriteByte('\'')
			rest = rest[3:]
		}
		return b.String()
	}
	if i := strings.IndexAny(command, " \t"); i >= 0 {
		return command[:i]
	}
	return command
}

// InspectSettings is Inspect of one decoded settings document that holds
// both the hooks and the MCP server (Gemini CLI's settings.json, which may
// carry comments the harness allows; the caller parsed it).
func InspectSettings(t Target, doc map[string]any) Installed {
	in := Installed{HooksExists: true, MCPExists: true}
	in.HooksFile, in.MCPFile = t.files()
	in.Hooks, in.Rewake = t.ourHooks(doc)
	in.PreTool = t.preToolHooks(doc)
	in.HooksDisabled = doc["disableAllHooks"] == true
	servers, _ := doc["mcpServers"].(map[string]any)
	in.MCP = DecodeMCPServer(servers["intercom"])
	return in
}
