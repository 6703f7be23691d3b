package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/intercom-dev/intercom/internal/bounded"
	"github.com/intercom-dev/intercom/internal/runs"
)

// CodexEnvVars are the variables Codex must pass to `intercom mcp` (it
// passes MCP servers only a small default set): where the broker and the
// session's name are.
var CodexEnvVars = append([]string{"INTERCOM_HOME", "INTERCOM_SOCKET", "INTERCOM_NAME", "INTERCOM_SESSION_ID", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "TMPDIR"},
	runs.ChildVars...)

// codexRecord says what install changed in a Codex config.toml, so that
// uninstall takes back exactly that. It lives beside the config.
type codexRecord struct {
	HooksAdded    bool    `json:"features_hooks_added,omitempty"` // features.hooks was absent
	HooksBefore   *bool   `json:"features_hooks_before,omitempty"`
	FeaturesTable bool    `json:"features_table_added,omitempty"` // install wrote the [features] header
	MCPAdded      bool    `json:"mcp_server_added,omitempty"`
	MCPBefore     *string `json:"mcp_server_before,omitempty"` // the entry install replaced, as it was
}

func (r codexRecord) empty() bool { return r == codexRecord{} }

func recordPath(configFile string) string {
	return filepath.Join(filepath.Dir(configFile), "intercom-install.json")
}

func readRecord(path string) (codexRecord, []byte, error) {
	var r codexRecord
	data, err := bounded.ReadFile(path, path, maxSettings)
	if errors.Is(err, os.ErrNotExist) {
		return r, nil, nil
	}
	if err != nil {
		return r, nil, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, data, fmt.Errorf("%s: %w", path, err)
	}
	return r, data, nil
}

// CodexToolTimeoutSec is the tool_timeout_sec install gives the intercom
// MCP server. Codex stops waiting for a tool call after 60 s by default
// ("tool_timeout_sec limits how long individual tool calls may run
// (default: 60 seconds)"), sooner than an ask waits for its reply
// (askTimeoutMs, 120 s by default): the reply would come after Codex gave
// up and never reach the model. intercom's tool bounds its own waits.
const CodexToolTimeoutSec = 600

// mcpServer is the [mcp_servers.intercom] install writes.
func (t Target) mcpServer() map[string]any {
	return map[string]any{"command": t.Command, "args": []any{"mcp", "--harness", "codex"}, "env_vars": anySlice(CodexEnvVars),
		"tool_timeout_sec": int64(CodexToolTimeoutSec)}
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func tomlValue(v any) string {
	b, _ := json.Marshal(v) // a JSON string or array of strings is a TOML one
	return string(b)
}

func (t Target) mcpTable() string {
	return fmt.Sprintf("[mcp_servers.intercom]\ncommand = %s\nargs = %s\nenv_vars = %s\ntool_timeout_sec = %d\n",
		tomlValue(t.Command), tomlValue([]string{"mcp", "--harness", "codex"}), tomlValue(CodexEnvVars), CodexToolTimeoutSec)
}

func (t Target) mcpInline() string {
	return fmt.Sprintf("{ command = %s, args = %s, env_vars = %s, tool_timeout_sec = %d }",
		tomlValue(t.Command), tomlValue([]string{"mcp", "--harness", "codex"}), tomlValue(CodexEnvVars), CodexToolTimeoutSec)
}

// Legacy marker block of earlier installs (removed on install and uninstall).
const (
	tomlBegin = "# >>> intercom (managed by `intercom install codex`; `intercom uninstall codex` removes it)"
	tomlEnd   = "# <<< intercom"
)

func dropLegacy(data []byte) []byte {
	i := bytes.Index(data, []byte(tomlBegin))
	if i < 0 {
		return data
	}
	j := bytes.Index(data[i:], []byte(tomlEnd))
	if j < 0 {
		return data
	}
	return splice(data, i, lineEnd(data, i+j+len(tomlEnd)), "")
}

func appendBlock(data []byte, block string) []byte {
	out := bytes.TrimRight(data, "\n")
	if len(out) > 0 {
		out = append(out, "\n\n"...)
	}
	return append(out, block...)
}

// editCodexConfig applies install (add) or uninstall (!add) to a Codex
// config.toml, guided by its parse tree so that only intercom's entries
// change; rec is what earlier installs recorded and is updated.
func (t Target) editCodexConfig(data []byte, rec codexRecord, add bool) ([]byte, codexRecord, error) {
	data = dropLegacy(data)
	var err error
	if add {
		if data, rec, err = t.addHooksFeature(data, rec); err == nil {
			data, rec, err = t.addMCPServer(data, rec)
		}
		if err == nil {
			err = t.checkInstalled(data)
		}
	} else {
		if data, err = t.removeMCPServer(data, rec); err == nil {
			data, err = removeHooksFeature(data, rec)
		}
		rec = codexRecord{}
	}
	if err != nil {
		return nil, rec, err
	}
	return data, rec, nil
}

func (t Target) addHooksFeature(data []byte, rec codexRecord) ([]byte, codexRecord, error) {
	entries, err := scanTOML(data)
	if err != nil {
		return nil, rec, fmt.Errorf("config.toml is not valid TOML: %w", err)
	}
	if e := find(entries, []string{"features", "hooks"}); e != nil {
		if e.Value == unstable.Bool && e.Data == "true" {
			return data, rec, nil
		}
		if !rec.HooksAdded && rec.HooksBefore == nil {
			was := e.Data == "true"
			rec.HooksBefore = &was
		}
		return setValue(data, e, "true"), rec, nil
	}
	if rec.HooksBefore == nil {
		rec.HooksAdded = true
	}
	f := find(entries, []string{"features"})
	switch {
	case f != nil && f.Kind == unstable.KeyValue && f.Value == unstable.InlineTable:
		return insertMember(data, f, "hooks = true"), rec, nil
	case f != nil && f.Kind == unstable.Table:
		return splice(data, f.End, f.End, ensureNL(data, f.End)+"hooks = true\n"), rec, nil
	case f != nil:
		return nil, rec, fmt.Errorf("config.toml: features is not a table")
	}
	for _, e := range entries {
		if e.Kind == unstable.KeyValue && len(e.Path) > 1 && e.Path[0] == "features" {
			end := lineEnd(data, e.End)
			return splice(data, end, end, ensureNL(data, end)+"features.hooks = true\n"), rec, nil
		}
	}
	rec.FeaturesTable = true
	return appendBlock(data, "[features]\nhooks = true\n"), rec, nil
}

// ensureNL is "\n" when offset at does not start a line.
func ensureNL(data []byte, at int) string {
	if at > 0 && data[at-1] != '\n' {
		return "\n"
	}
	return ""
}

// setValue replaces the value of key-value e.
func setValue(data []byte, e *tomlEntry, value string) []byte {
	eq := bytes.IndexByte(data[e.Start:e.End], '=')
	return splice(data, e.Start+eq+1, e.End, " "+value)
}

func (t Target) addMCPServer(data []byte, rec codexRecord) ([]byte, codexRecord, error) {
	path := []string{"mcp_servers", "intercom"}
	entries, err := scanTOML(data)
	if err != nil {
		return nil, rec, err
	}
	current, err := mcpEntryOf(data)
	if err != nil {
		return nil, rec, err
	}
	if reflect.DeepEqual(current, t.mcpServer()) {
		return data, rec, nil
	}
	e := find(entries, path)
	if e == nil && definesUnder(entries, path) {
		return nil, rec, errors.New("config.toml defines mcp_servers.intercom with dotted keys; remove it, then install again")
	}
	if e == nil {
		rec.MCPAdded = true
		if s := find(entries, []string{"mcp_servers"}); s != nil && s.Kind == unstable.KeyValue && s.Value == unstable.InlineTable {
			return insertMember(data, s, "intercom = "+t.mcpInline()), rec, nil
		}
		return appendBlock(data, t.mcpTable()), rec, nil
	}
	start, end := entryRange(data, entries, e)
	if !rec.MCPAdded && rec.MCPBefore == nil {
		was := string(data[start:end])
		rec.MCPBefore = &was
	}
	if e.Kind == unstable.Table {
		return splice(data, start, end, t.mcpTable()), rec, nil
	}
	eq := bytes.IndexByte(data[e.Start:e.End], '=')
	return splice(data, e.Start+eq+1, e.End, " "+t.mcpInline()), rec, nil
}

// entryRange is the bytes of an entry: a table with its contents, or a
// key-value.
func entryRange(data []byte, entries []tomlEntry, e *tomlEntry) (int, int) {
	if e.Kind == unstable.Table {
		for i := range entries {
			if &entries[i] == e {
				return e.Start, tableEnd(data, entries, i)
			}
		}
	}
	return e.Start, e.End
}

// mcpEntryOf decodes mcp_servers.intercom (nil when absent).
func mcpEntryOf(data []byte) (map[string]any, error) {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("config.toml is not valid TOML: %w", err)
	}
	servers, _ := doc["mcp_servers"].(map[string]any)
	s, _ := servers["intercom"].(map[string]any)
	return s, nil
}

// checkInstalled decodes the result: it must be valid TOML with hooks on
// and our MCP server.
func (t Target) checkInstalled(data []byte) error {
	var doc struct {
		Features   map[string]any            `toml:"features"`
		MCPServers map[string]map[string]any `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("edited config.toml would not be valid TOML (nothing written): %w", err)
	}
	if doc.Features["hooks"] != true || !reflect.DeepEqual(doc.MCPServers["intercom"], t.mcpServer()) {
		return errors.New("edited config.toml does not read back as installed (nothing written)")
	}
	return nil
}

func (t Target) removeMCPServer(data []byte, rec codexRecord) ([]byte, error) {
	entries, err := scanTOML(data)
	if err != nil {
		return nil, fmt.Errorf("config.toml is not valid TOML: %w", err)
	}
	e := find(entries, []string{"mcp_servers", "intercom"})
	if e == nil {
		return data, nil
	}
	current, err := mcpEntryOf(data)
	if err != nil {
		return nil, err
	}
	cmd, _ := current["command"].(string)
	ours := rec.MCPAdded || rec.MCPBefore != nil || (rec.empty() && strings.Contains(filepath.Base(cmd), "intercom"))
	if !ours {
		return data, nil
	}
	start, end := entryRange(data, entries, e)
	if rec.MCPBefore != nil {
		return splice(data, start, end, *rec.MCPBefore), nil
	}
	if member := isMember(entries, e); member {
		return removeMember(data, e), nil
	}
	return dropBlankLine(deleteLines(data, start, end), start), nil
}

func removeHooksFeature(data []byte, rec codexRecord) ([]byte, error) {
	if !rec.HooksAdded && rec.HooksBefore == nil {
		return data, nil
	}
	entries, err := scanTOML(data)
	if err != nil {
		return nil, err
	}
	e := find(entries, []string{"features", "hooks"})
	if e == nil {
		return data, nil
	}
	if rec.HooksBefore != nil {
		return setValue(data, e, fmt.Sprint(*rec.HooksBefore)), nil
	}
	if isMember(entries, e) {
		return removeMember(data, e), nil
	}
	data = deleteLines(data, e.Start, e.End)
	if rec.FeaturesTable {
		entries, err = scanTOML(data)
		if err != nil {
			return nil, err
		}
		for i, f := range entries {
			if f.Kind == unstable.Table && len(f.Path) == 1 && f.Path[0] == "features" && tableEnd(data, entries, i) == f.End {
				data = dropBlankLine(deleteLines(data, f.Start, f.End), f.Start)
				break
			}
		}
	}
	return data, nil
}

// isMember reports whether e sits inside an inline table.
func isMember(entries []tomlEntry, e *tomlEntry) bool {
	for i := range entries {
		if &entries[i] == e {
			return false
		}
	}
	return true
}

// dropBlankLine removes the blank line left before offset at by deleting
// a block that install had separated with one.
func dropBlankLine(data []byte, at int) []byte {
	if at >= 2 && at <= len(data) && data[at-1] == '\n' && data[at-2] == '\n' {
		return splice(data, at-1, at, "")
	}
	if at == len(data) && at >= 1 && data[at-1] == '\n' {
		return bytes.TrimRight(data, "\n")
	}
	return data
}

// codexPlans are the config.toml change and its record.
func (t Target) codexPlans(configFile string, add bool) ([]Plan, error) {
	before, err := bounded.ReadFile(configFile, configFile, maxSettings)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	rp := recordPath(configFile)
	rec, recBefore, err := readRecord(rp)
	if err != nil {
		return nil, err
	}
	after, rec, err := t.editCodexConfig(before, rec, add)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", configFile, err)
	}
	after = bytes.TrimRight(after, "\n")
	if len(bytes.TrimSpace(after)) == 0 && (before == nil || !add) {
		after = nil // nothing left but what install added: remove the file
	} else {
		after = append(after, '\n')
	}
	if bytes.Equal(bytes.TrimRight(before, "\n"), bytes.TrimRight(after, "\n")) {
		after = before
	}
	var recAfter []byte
	if add && !rec.empty() {
		recAfter, _ = json.MarshalIndent(rec, "", "  ")
		recAfter = append(recAfter, '\n')
		if recBefore != nil && bytes.Equal(bytes.TrimSpace(recBefore), bytes.TrimSpace(recAfter)) {
			recAfter = recBefore
		}
	}
	return []Plan{{Path: configFile, Before: before, After: after}, {Path: rp, Before: recBefore, After: recAfter}}, nil
}
