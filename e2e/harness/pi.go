//go:build harness

package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Pi is one Pi process of a world: `pi --mode rpc` (JSON lines on stdin
// and stdout) or a finished `pi -p`.
type Pi struct {
	*Agent
	w    *World
	Line PiLine
}

// InstallPi runs the real `intercom install pi` for the world's user (Pi's
// agent dir is the default, ~/.pi/agent under the world's HOME).
func (w *World) InstallPi() string {
	w.t.Helper()
	return w.OK("install", "pi")
}

// PiAgentDir is the world user's Pi agent directory.
func (w *World) PiAgentDir() string { return filepath.Join(w.Home, ".pi", "agent") }

// piModel registers model as provider fake-<name> in the world's Pi
// models.json and returns the --model value that selects it.
func (w *World) piModel(name string, model *Model) string {
	w.t.Helper()
	path := filepath.Join(w.PiAgentDir(), "models.json")
	doc := map[string]any{}
	if data, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(data, &doc)
	}
	providers, _ := doc["providers"].(map[string]any)
	if providers == nil {
		providers = map[string]any{}
	}
	provider := "fake-" + name
	providers[provider] = map[string]any{"baseUrl": model.URL, "api": "anthropic-messages", "apiKey": "standin-not-a-key",
		"models": []any{map[string]any{"id": "m"}}}
	doc["providers"] = providers
	if err := os.MkdirAll(w.PiAgentDir(), 0o700); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(mustJSON(doc)), 0o600); err != nil {
		w.t.Fatal(err)
	}
	return provider + "/m"
}

// piEnv keeps Pi off the network.
func piEnv(env []string) []string { return append([]string{"PI_OFFLINE=1"}, env...) }

// StartPi starts `pi --mode rpc` in dir against model; it stays up until
// its stdin closes.
func (w *World) StartPi(name, dir string, line PiLine, model *Model, args []string, env ...string) *Pi {
	w.t.Helper()
	argv := line.argv(append([]string{"--mode", "rpc", "--model", w.piModel(name, model)}, args...)...)
	a := w.startAgent(name, dir, model, piEnv(env), true, argv...)
	return &Pi{Agent: a, w: w, Line: line}
}

// RunPiOnce runs `pi -p PROMPT` in dir and waits for it to exit 0.
func (w *World) RunPiOnce(name, dir string, line PiLine, model *Model, prompt string, args []string, env ...string) *Pi {
	w.t.Helper()
	argv := line.argv(append([]string{"-p", "--model", w.piModel(name, model)}, append(args, prompt)...)...)
	a := w.startAgent(name, dir, model, piEnv(env), false, argv...)
	p := &Pi{Agent: a, w: w, Line: line}
	if code := p.Wait(turnTimeout); code != 0 {
		w.t.Fatalf("%s: pi -p exited %d\n%s", name, code, tailLines(p.Log(), 40))
	}
	return p
}

// Send writes one rpc command.
func (p *Pi) Send(cmd map[string]any) {
	p.t.Helper()
	if _, err := fmt.Fprintf(p.stdin, "%s\n", mustJSON(cmd)); err != nil {
		p.t.Fatalf("%s: write rpc command: %v", p.Name, err)
	}
}

// Prompt sends a prompt and waits until the run it starts has ended
// (agent_end), returning the index of that event.
func (p *Pi) Prompt(text string) int {
	p.t.Helper()
	from := len(p.Events())
	p.Send(map[string]any{"type": "prompt", "message": text})
	return p.AwaitEnd(from, turnTimeout)
}

// AwaitEnd waits for an agent_end event after index from.
func (p *Pi) AwaitEnd(from int, timeout time.Duration) int {
	p.t.Helper()
	return p.AwaitEvent(from, timeout, "agent_end", func(ev map[string]any) bool { return ev["type"] == "agent_end" })
}

// Session is the intercom session of the Pi working in dir, once its
// extension has registered it (Pi's start, compiling the extension, can
// take longer than a message on a loaded machine: a turn's time).
func (p *Pi) Session() Session {
	p.t.Helper()
	Await(p.t, turnTimeout, func() bool { return len(p.w.SessionsIn(p.Dir)) > 0 }, "%s's intercom session", p.Name)
	return p.w.AgentSession(p.Dir, "")
}

// PiBash is a call of Pi's bash tool.
func PiBash(command string) Call {
	return Call{Name: "bash", Args: map[string]any{"command": command}}
}

// PiIntercom is a call of the extension's intercom tool.
func PiIntercom(args map[string]any) Call { return Call{Name: "intercom", Args: args} }

// offers reports whether request r declares the tool name.
func offers(r *Request, name string) bool {
	tools, _ := r.JSON["tools"].([]any)
	for _, t := range tools {
		if m, _ := t.(map[string]any); m != nil && m["name"] == name {
			return true
		}
	}
	return false
}

// userTurns are the texts of the user turns of request r: what the model
// was shown, not what it wrote in its own tool calls.
func userTurns(r *Request) []string {
	var out []string
	msgs, _ := r.JSON["messages"].([]any)
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "user" {
			var b strings.Builder
			writeStrings(&b, mm)
			out = append(out, b.String())
		}
	}
	return out
}

// userCount is how often s occurs in the user turns of request r.
func userCount(r *Request, s string) int {
	n := 0
	for _, text := range userTurns(r) {
		n += strings.Count(text, s)
	}
	return n
}

// userTurnsHoldingAll counts the user turns of request r holding every s.
func userTurnsHoldingAll(r *Request, all ...string) int {
	n := 0
	for _, text := range userTurns(r) {
		ok := true
		for _, s := range all {
			ok = ok && strings.Contains(text, s)
		}
		if ok {
			n++
		}
	}
	return n
}

// StartPeerIn attaches a session named name working in dir (so that it is
// in the project of an agent there).
func (w *World) StartPeerIn(name, dir string) *Peer {
	w.t.Helper()
	a := w.startAgent("peer-"+name, dir, nil, nil, false, filepath.Join(binDir, "intercom"), "attach", "--name", name, "--json")
	i := a.AwaitEvent(0, 30*time.Second, "attached", func(ev map[string]any) bool { return ev["event"] == "attached" })
	id, _ := a.Events()[i]["id"].(string)
	return &Peer{Agent: a, w: w, ID: id, name: name}
}

// AwaitUI waits for an extension_ui_request with method after index from
// and returns its index.
func (p *Pi) AwaitUI(from int, method string) int {
	p.t.Helper()
	return p.AwaitEvent(from, msgTimeout, "extension_ui_request "+method, func(ev map[string]any) bool {
		return ev["type"] == "extension_ui_request" && ev["method"] == method
	})
}

// Answer answers the dialog of event i with value (nil: cancel).
func (p *Pi) Answer(i int, value any) {
	p.t.Helper()
	id := p.Events()[i]["id"]
	if value == nil {
		p.Send(map[string]any{"type": "extension_ui_response", "id": id, "cancelled": true})
		return
	}
	p.Send(map[string]any{"type": "extension_ui_response", "id": id, "value": value})
}

// systemText is the system prompt of an Anthropic request.
func systemText(r *Request) string {
	var b strings.Builder
	writeStrings(&b, r.JSON["system"])
	return b.String()
}
