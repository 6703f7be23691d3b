package reservations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Blocked returns why the tool call of session sid, run in dir, must not
// run: one line naming each path another session holds, its holder, reason
// and how to ask it; "" when nothing blocks it (no path it knows of, a
// path outside every project, or only this session's own leases).
func Blocked(ctx context.Context, c Lister, sid, dir, tool string, input json.RawMessage) (string, error) {
	paths := ToolPaths(tool, input)
	if len(paths) == 0 {
		return "", nil
	}
	byProject := map[string][]string{}
	var order []string
	for _, p := range paths {
		pl, rel, err := Resolve(dir, p)
		if errors.Is(err, ErrOutside) {
			continue
		}
		if err != nil {
			return "", err
		}
		if rel, err = wire.CleanReservationPath(rel); err != nil {
			continue // not a path a reservation can name
		}
		if byProject[pl.Project] == nil {
			order = append(order, pl.Project)
		}
		byProject[pl.Project] = append(byProject[pl.Project], rel)
	}
	var conflicts []wire.ReservationConflict
	for _, project := range order {
		res, err := c.Reservations(ctx, wire.ReservationsRequest{SessionID: sid, Project: project, Check: byProject[project]})
		if err != nil {
			return "", fmt.Errorf("check reservations: %w", err)
		}
		conflicts = append(conflicts, res.Blocked...)
	}
	return BlockMessage(conflicts), nil
}

// BlockMessage is the one message a blocked edit gets ("" for none).
func BlockMessage(conflicts []wire.ReservationConflict) string {
	if len(conflicts) == 0 {
		return ""
	}
	var parts []string
	seen := map[string]bool{}
	for _, c := range conflicts {
		if s := c.String(); !seen[s] {
			seen[s] = true
			parts = append(parts, s)
		}
	}
	return "intercom: this edit is blocked by a reservation: " + strings.Join(parts, "; ") +
		". Work on something else or ask the holder; `intercom reservations` shows when it is free."
}

// DenyOutput is the pre-tool hook answer of harness that refuses the tool
// call with reason, shown to the model: Gemini CLI's BeforeTool
// {"decision":"deny"}, else Claude Code's and Codex's PreToolUse
// permissionDecision.
func DenyOutput(harness, reason string) []byte {
	if harness == "gemini" {
		out, _ := json.Marshal(map[string]any{"decision": "deny", "reason": reason})
		return append(out, '\n')
	}
	out, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason,
	}})
	return append(out, '\n')
}
