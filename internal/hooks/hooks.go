// Package hooks answers the hooks of Claude Code, Codex and Gemini CLI
// (Gemini's take the same JSON under other event names). hooks.go speaks
// their contract: the JSON a harness writes on a hook's stdin and the JSON
// a hook answers with (extra context for the model, or a Stop block).
// answer.go is the one workflow of a hook call: bind the agent's session,
// report its state and hand waiting messages over (agentsession.Boundary
// chooses and composes them) as the answer the event takes, in one broker
// request (and the acknowledgement of what it handed over), starting the
// session's holder when it has none.
package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/intercom-dev/intercom/internal/jsonfields"
)

// Events handled.
const (
	SessionStart     = "SessionStart"
	UserPromptSubmit = "UserPromptSubmit"
	PostToolUse      = "PostToolUse"
	Stop             = "Stop"
)

// PreToolUse is the pre-tool event, answered apart from Events: whether a
// file-editing tool call may run (reservations), and nothing else.
// GeminiBeforeTool is Gemini CLI's name of it.
const (
	PreToolUse       = "PreToolUse"
	GeminiBeforeTool = "BeforeTool"
)

// IsPreTool reports whether harness's event is the pre-tool event.
func IsPreTool(harness, event string) bool {
	return event == PreToolUse || (harness == "gemini" && event == GeminiBeforeTool)
}

// Events lists the hook events intercom answers, in install order.
var Events = []string{SessionStart, UserPromptSubmit, PostToolUse, Stop}

// Harnesses lists the harnesses whose hooks intercom answers.
var Harnesses = []string{"claude", "codex", "gemini"}

// geminiEvents are Gemini CLI's names of the events, in install order
// (its docs: BeforeAgent fires after the user submits a prompt, AfterAgent
// once per turn after the final response).
var geminiEvents = []string{"SessionStart", "BeforeAgent", "AfterTool", "AfterAgent"}

// HarnessEvents lists the events intercom answers under harness's own
// names, in install order (the same order as Events).
func HarnessEvents(harness string) []string {
	if harness == "gemini" {
		return geminiEvents
	}
	return Events
}

// Canonical returns the event of Events that harness's event stands for:
// Gemini's BeforeAgent is UserPromptSubmit, AfterTool PostToolUse and
// AfterAgent Stop. It fails for an unknown harness or event.
func Canonical(harness, event string) (string, error) {
	if !slices.Contains(Harnesses, harness) {
		return "", fmt.Errorf("unknown harness %q (want claude, codex or gemini)", harness)
	}
	names := HarnessEvents(harness)
	if i := slices.Index(names, event); i >= 0 {
		return Events[i], nil
	}
	if slices.Contains(Events, event) { // the Claude-shaped name works everywhere
		return event, nil
	}
	return "", fmt.Errorf("unknown hook event %q for %s (want %s)", event, harness, strings.Join(names, ", "))
}

// MaxContext is the most text one hook answer carries. Claude Code keeps
// hook context of up to 10,000 characters inline and replaces a longer one
// with a preview, so an answer stays under that.
const MaxContext = 9000

// MaxInput bounds the hook input read from stdin. A PostToolUse input
// carries the tool's whole response, so it is generous.
const MaxInput = 16 << 20

// Input is the part of a harness's hook JSON that intercom reads.
type Input struct {
	SessionID      string `json:"session_id"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	ToolName       string `json:"tool_name,omitempty"`
	StopHookActive bool   `json:"stop_hook_active,omitempty"`
	Source         string `json:"source,omitempty"`
}

// decode reads data as json.Unmarshal into Input does, without its
// reflection (jsonfields), or reports false for input it leaves to it.
func (in *Input) decode(data []byte) bool {
	return jsonfields.Decode(data,
		jsonfields.Field{Key: "session_id", Into: &in.SessionID},
		jsonfields.Field{Key: "cwd", Into: &in.Cwd},
		jsonfields.Field{Key: "hook_event_name", Into: &in.HookEventName},
		jsonfields.Field{Key: "tool_name", Into: &in.ToolName},
		jsonfields.Field{Key: "stop_hook_active", Into: &in.StopHookActive},
		jsonfields.Field{Key: "source", Into: &in.Source})
}

// ErrTooLarge is returned for an input over MaxInput bytes.
var ErrTooLarge = errors.New("hook input too large")

// Parse reads a hook input of at most MaxInput bytes. Whatever is left
// beyond the limit is read and dropped, so the harness never sees its pipe
// closed early.
func Parse(r io.Reader) (Input, error) {
	in, _, err := ParseRaw(r)
	return in, err
}

// ParseRaw is Parse that also returns the input's bytes, for a caller that
// reads fields Input does not carry (the pre-tool hook's tool_input).
func ParseRaw(r io.Reader) (Input, []byte, error) {
	var in Input
	data, err := io.ReadAll(io.LimitReader(r, MaxInput+1))
	if err != nil {
		return in, nil, fmt.Errorf("read hook input: %w", err)
	}
	if len(data) > MaxInput {
		_, _ = io.Copy(io.Discard, r)
		return in, nil, fmt.Errorf("%w: more than %d bytes on stdin", ErrTooLarge, MaxInput)
	}
	if len(data) == 0 {
		return in, nil, errors.New("hook input is empty (want the harness's JSON on stdin)")
	}
	if !in.decode(data) {
		in = Input{}
		if err := json.Unmarshal(data, &in); err != nil {
			return in, nil, fmt.Errorf("hook input is not JSON: %w", err)
		}
	}
	if in.SessionID == "" {
		return in, nil, errors.New("hook input has no session_id")
	}
	return in, data, nil
}

// ContextOutput is the answer that adds text to the model's context.
func ContextOutput(event, text string) []byte {
	out, _ := json.Marshal(map[string]any{
		"hookSpecificOutput": map[string]any{"hookEventName": event, "additionalContext": text},
	})
	return append(out, '\n')
}

// BlockOutput is the Stop answer that keeps the agent working on reason.
func BlockOutput(reason string) []byte {
	out, _ := json.Marshal(map[string]any{"decision": "block", "reason": reason})
	return append(out, '\n')
}

// StopOutput is harness's Stop answer that keeps the agent working on
// text, shown to its model once. Claude Code gets it as Stop
// additionalContext ("non-error feedback delivered to the model; the
// conversation continues so the model can act on it", in 2.1.197 as in
// 2.1.332): a block reason it shows twice since 2.1.33x, as "Stop hook
// feedback" and as a blocking-error note. Codex and Gemini CLI (AfterAgent)
// get the block.
func StopOutput(harness, text string) []byte {
	if harness == "claude" {
		return ContextOutput(Stop, text)
	}
	return BlockOutput(text)
}

// Empty is the answer with nothing to say. Gemini CLI shows a hook's
// stderr to the user when its stdout is empty, so a hook always answers.
var Empty = []byte("{}\n")
