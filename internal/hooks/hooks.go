// Package hooks speaks the hook contracts of Claude Code and Codex: it
// decodes the JSON a harness writes on a hook's stdin and builds the JSON
// the hook answers with (extra context for the model, or a Stop block), with
// the delivered messages capped to what a harness accepts.
package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Events handled.
const (
	SessionStart     = "SessionStart"
	UserPromptSubmit = "UserPromptSubmit"
	PostToolUse      = "PostToolUse"
	Stop             = "Stop"
)

// Events lists the hook events intercom answers, in install order.
var Events = []string{SessionStart, UserPromptSubmit, PostToolUse, Stop}

// MaxContext is the most text one hook answer carries.
const MaxContext = 9000

// Input is the part of a harness's hook JSON that intercom reads.
type Input struct {
	SessionID      string `json:"session_id"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	ToolName       string `json:"tool_name,omitempty"`
	StopHookActive bool   `json:"stop_hook_active,omitempty"`
	Source         string `json:"source,omitempty"`
}

// Parse reads a hook input (at most 4 MiB).
func Parse(r io.Reader) (Input, error) {
	var in Input
	data, err := io.ReadAll(io.LimitReader(r, 4<<20))
	if err != nil {
		return in, fmt.Errorf("read hook input: %w", err)
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return in, fmt.Errorf("hook input is not JSON: %w", err)
	}
	if in.SessionID == "" {
		return in, errors.New("hook input has no session_id")
	}
	return in, nil
}

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// SessionID maps a harness session id to a stable intercom session id.
func SessionID(harness, id string) string {
	prefix := map[string]string{"claude": "cc-", "codex": "cx-"}[harness]
	s := prefix + unsafeID.ReplaceAllString(id, "-")
	if len(s) > 80 {
		s = s[:80]
	}
	for len(s) < 8 {
		s += "0"
	}
	return s
}

// Compose renders messages into at most MaxContext characters. It returns
// the text and how many messages it holds in full; when some do not fit, a
// digest line says how many more wait ("run `intercom inbox`").
func Compose(msgs []wire.Message, render func(wire.Message) string, session string) (string, int) {
	if len(msgs) == 0 {
		return "", 0
	}
	var b strings.Builder
	head := fmt.Sprintf("intercom: %d new message(s) for this session.\n", len(msgs))
	b.WriteString(head)
	n := 0
	for _, m := range msgs {
		part := render(m)
		digestRoom := 120
		if b.Len()+len(part)+digestRoom > MaxContext && n > 0 {
			break
		}
		if b.Len()+len(part)+digestRoom > MaxContext { // one huge message: cut it
			part = part[:max(0, MaxContext-b.Len()-digestRoom-40)] + "\n[… truncated; full text: intercom inbox]\n"
		}
		b.WriteString(part)
		n++
	}
	if rest := len(msgs) - n; rest > 0 {
		fmt.Fprintf(&b, "\n%d more messages: run `intercom --session %s inbox`\n", rest, session)
	}
	return b.String(), n
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
