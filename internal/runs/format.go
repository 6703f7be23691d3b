package runs

import (
	"fmt"
	"strings"
)

// Reasons a child contacts its supervisor.
const (
	ReasonDecision  = "need_decision"
	ReasonInterview = "interview_request"
	ReasonProgress  = "progress_update"
)

// DefaultNudge is the nudge text when none is given.
const DefaultNudge = "What are you blocked on? Reply with the smallest next step, or state the exact decision you need."

// Heading returns the first line of a supervisor message.
func Heading(reason string) string {
	switch reason {
	case ReasonDecision:
		return "Subagent needs a supervisor decision."
	case ReasonInterview:
		return "Subagent requests a structured supervisor interview."
	case ReasonProgress:
		return "Subagent progress update."
	}
	return "Subagent message."
}

// FormatSupervisorMessage renders what the supervisor sees.
func FormatSupervisorMessage(reason, run, agent string, index int, childTarget, body, qid string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nRun: %s\nAgent: %s\nChild index: %d\n", Heading(reason), run, agent, index)
	if childTarget != "" {
		fmt.Fprintf(&b, "Child intercom target: %s\n", childTarget)
	}
	if qid != "" {
		fmt.Fprintf(&b, "%sanswer with `agent-runs answer %s --question-id %s \"...\"` or `intercom reply`)\n", questionLine(qid), run, qid)
	}
	fmt.Fprintf(&b, "\n%s", body)
	return b.String()
}

// questionLine starts the line of a supervisor message that names its
// question: how the question's ask is found before the child recorded it.
func questionLine(qid string) string { return "Question: " + qid + " (" }
