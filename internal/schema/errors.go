package schema

// Error is what a command prints on stdout instead of its result when it
// fails under --json; the exit status is the same as without --json.
type Error struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody describes the failure.
type ErrorBody struct {
	// Code is stable and meant for programs: usage, invalid_config,
	// interrupted, broker_unreachable, broker_unhealthy, socket_mismatch,
	// too_large, failed, or a broker
	// error code (bad_request, not_found, ambiguous, self_target, too_large,
	// ask_in_progress, peer_offline, no_space, full, internal).
	Code string `json:"code" jsonschema:"stable error code"`
	// Message is the one line a person would read on stderr.
	Message string `json:"message"`
	// Choices lists copyable targets when code is ambiguous.
	Choices []string `json:"choices,omitempty"`
}

// Error codes a command can report besides the broker's (wire.Code…).
const (
	CodeUsage       = "usage"
	CodeConfig      = "invalid_config"
	CodeInterrupted = "interrupted"
	CodeUnreachable = "broker_unreachable"
	CodeUnhealthy   = "broker_unhealthy"
	CodeMismatch    = "socket_mismatch"
	CodeFailed      = "failed"
)
