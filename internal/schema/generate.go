package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/intercom-dev/intercom/internal/buildinfo"
	"github.com/intercom-dev/intercom/internal/config"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Output names one --json output: its schema file docs/schemas/<Name>.json,
// the command that prints it and the Go type printed.
type Output struct {
	Name    string
	Command string
	Type    reflect.Type
}

func out[T any](name, command string) Output {
	return Output{Name: name, Command: command, Type: reflect.TypeFor[T]()}
}

// Outputs is every --json output of intercom, agent-runs and intercom-bridge, and the error
// envelope. (hook prints the harness's own contract, docs/agents.md.)
var Outputs = []Output{
	out[Error]("error", "any command with --json, when it fails"),
	out[buildinfo.Info]("version", "intercom|agent-runs|intercom-bridge|intercom-broker version --json"),
	out[Attached]("intercom-attach-attached", "intercom attach --json (first line)"),
	out[Reconnected]("intercom-attach-reconnected", "intercom attach --json (after a broker restart)"),
	out[Message]("intercom-message", "intercom attach --json (each message)"),
	out[wire.ListReply]("intercom-list", "intercom list --json"),
	out[Status]("intercom-status", "intercom status --json"),
	out[wire.Session]("intercom-state", "intercom state --json"),
	out[wire.SendReply]("intercom-send", "intercom send --json"),
	out[Ask]("intercom-ask", "intercom ask --json"),
	out[Reply]("intercom-reply", "intercom reply --json"),
	out[Pending]("intercom-pending", "intercom pending --json"),
	out[Messages]("intercom-inbox", "intercom inbox --json"),
	out[Wait]("intercom-wait", "intercom wait --json"),
	out[Digest]("intercom-digest", "intercom digest --json"),
	out[Forgot]("intercom-forget", "intercom forget --json"),
	out[wire.Trace]("intercom-trace", "intercom trace --json"),
	out[wire.HeldReply]("intercom-held", "intercom held --json"),
	out[wire.HeldDecideReply]("intercom-held-decide", "intercom held approve|refuse ID --json"),
	out[HistoryList]("intercom-history", "intercom history --json"),
	out[SearchResults]("intercom-search", "intercom search --json"),
	out[wire.HistoryPurgeReply]("intercom-purge", "intercom purge --json"),
	out[WebStarted]("intercom-web", "intercom web --json (first line)"),
	out[Install]("intercom-install", "intercom install --json, intercom uninstall --json"),
	out[Doctor]("intercom-doctor", "intercom doctor --json"),
	out[wire.SubscribeReply]("intercom-subscribe", "intercom subscribe --json"),
	out[Unsubscribed]("intercom-unsubscribe", "intercom unsubscribe --json"),
	out[wire.PublishReply]("intercom-publish", "intercom publish --json"),
	out[wire.TopicsReply]("intercom-topics", "intercom topics --json"),
	out[wire.ReserveReply]("intercom-reserve", "intercom reserve --json"),
	out[wire.ReleaseReply]("intercom-release", "intercom release --json"),
	out[wire.ReservationsReply]("intercom-reservations", "intercom reservations --json (also --check, --history, --staged)"),
	out[wire.ReservationToolVerdict]("intercom-reservations-check-tool", "intercom reservations --check-tool NAME --json"),
	out[config.Config]("intercom-config", "intercom config --json"),
	out[ToolDescriptions]("intercom-tool-describe", "intercom tool --describe --json"),
	out[ToolResult]("intercom-tool", "intercom tool intercom|contact_supervisor --json"),
	out[ProgressAccepted]("intercom-contact-progress", "intercom contact-supervisor --reason progress_update --json"),
	out[SupervisorAnswer]("intercom-contact-answer", "intercom contact-supervisor --reason need_decision|interview_request --json"),
	out[RunList]("agent-runs-list", "agent-runs list --json"),
	out[RunStatus]("agent-runs-status", "agent-runs status --json"),
	out[Questions]("agent-runs-questions", "agent-runs questions --json"),
	out[RunStarted]("agent-runs-start", "agent-runs start --json"),
	out[RunResult]("agent-runs-start-wait", "agent-runs start --wait --json"),
	out[AnswerReceipt]("agent-runs-answer", "agent-runs answer --json"),
	out[Continued]("agent-runs-continue", "agent-runs continue --json"),
	out[Stopped]("agent-runs-stop", "agent-runs stop --json"),
	out[Nudged]("agent-runs-nudge", "agent-runs nudge --json"),
	out[BridgeEvent]("intercom-bridge-event", "intercom-bridge --json serve|join (one line per event)"),
	out[CAWritten]("intercom-bridge-certs-init", "intercom-bridge --json certs init"),
	out[CertIssued]("intercom-bridge-certs-issue", "intercom-bridge --json certs issue"),
	out[CertRevoked]("intercom-bridge-certs-revoke", "intercom-bridge --json certs revoke"),
	out[CRLSigned]("intercom-bridge-certs-crl", "intercom-bridge --json certs crl"),
	out[NATSConfig]("intercom-bridge-nats-config", "intercom-bridge --json nats-config"),
	out[wire.BridgeStatusReply]("intercom-bridge-status", "intercom-bridge --json status"),
	out[wire.BridgePurgeReply]("intercom-bridge-purge", "intercom-bridge --json purge"),
}

// Generate returns the JSON Schema document of o, indented, with a final
// newline. Arrays are never null in our output, so the schema says array
// where the generator allows null for Go slices.
func Generate(o Output) ([]byte, error) {
	s, err := jsonschema.ForType(o.Type, &jsonschema.ForOptions{})
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", o.Name, err)
	}
	strictArrays(s)
	s.Schema = "https://json-schema.org/draft/2020-12/schema"
	s.ID = "https://github.com/intercom-dev/intercom/docs/schemas/" + o.Name + ".json"
	s.Title = o.Name
	s.Description = o.Command
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

func strictArrays(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" && s.Types[1] == "array" {
		s.Types, s.Type = nil, "array"
	}
	strictArrays(s.Items)
	strictArrays(s.AdditionalProperties)
	keys := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		strictArrays(s.Properties[k])
	}
}
