package intercomcmd

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/intercom-dev/intercom/internal/bounded"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/mcpserver"
	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// ToolCmd runs one call of an agent tool for a harness extension.
type ToolCmd struct {
	Tool     string `arg:"" optional:"" enum:"intercom,contact_supervisor," default:"" help:"intercom or contact_supervisor."`
	Args     string `arg:"" optional:"" help:"The tool's JSON arguments (default: read from stdin)." placeholder:"JSON"`
	Describe bool   `help:"Print the tools' descriptions (what an extension registers) instead of calling one."`
}

// Help shows examples.
func (ToolCmd) Help() string {
	return `Runs one call of the tools 'intercom mcp' offers, with the same arguments,
checks and wording, for harnesses that take tools from an extension rather
than MCP (Pi: integrations/pi). Prints the text the model reads; with --json
{"text": ...}. A call the tool refuses (bad arguments, unknown target) is a
failure: exit 1, the reason on stderr (with --json the error envelope).

intercom acts as --session (or INTERCOM_SESSION); contact_supervisor works
only inside a run started by 'agent-runs start' and blocks like
'intercom contact-supervisor'.

Examples:
  intercom --session pi-5f0c tool intercom '{"action":"list"}'
  echo '{"action":"send","to":"planner","message":"tests pass"}' | intercom --session pi-5f0c tool intercom
  intercom tool contact_supervisor '{"reason":"need_decision","message":"401 or 403?"}'
  intercom tool --describe --json`
}

// Run calls the tool.
func (t *ToolCmd) Run(e *env) error {
	if t.Describe {
		d := schema.ToolDescriptions{Intercom: mcpserver.ToolDescription, ContactSupervisor: mcpserver.ContactDescription}
		if e.g.JSON {
			return e.printJSON(d)
		}
		_, err := fmt.Fprintf(e.stdout, "intercom:\n%s\n\ncontact_supervisor:\n%s\n", d.Intercom, d.ContactSupervisor)
		return err
	}
	if t.Tool == "" {
		return kongrun.Usagef("tool needs intercom or contact_supervisor (or --describe)")
	}
	raw := []byte(t.Args)
	if t.Args == "" {
		var err error
		if raw, err = bounded.Read(e.stdin, "tool arguments (stdin)", 4*wire.MaxMessageBytes); err != nil {
			return kongrun.Usage(err)
		}
	}
	var text string
	var err error
	switch t.Tool {
	case "intercom":
		var in mcpserver.ToolInput
		if err := json.Unmarshal(raw, &in); err != nil {
			return kongrun.Usagef("tool arguments: %w", err)
		}
		text, err = t.intercom(e, in)
	default:
		var in mcpserver.ContactInput
		if err := json.Unmarshal(raw, &in); err != nil {
			return kongrun.Usagef("tool arguments: %w", err)
		}
		text, err = t.contact(e, in)
	}
	if err != nil {
		return err
	}
	if e.g.JSON {
		return e.printJSON(schema.ToolResult{Text: text})
	}
	_, err = fmt.Fprintln(e.stdout, strings.TrimRight(text, "\n"))
	return err
}

func (t *ToolCmd) intercom(e *env, in mcpserver.ToolInput) (string, error) {
	c, err := e.connect()
	if err != nil {
		return "", err
	}
	defer c.Close()
	self, err := e.needSelf(c, "tool intercom")
	if err != nil {
		return "", err
	}
	return mcpserver.Do(e.ctx, c, e.cfg, self, in)
}

func (t *ToolCmd) contact(e *env, in mcpserver.ContactInput) (string, error) {
	switch in.Reason {
	case "need_decision", "interview_request", "progress_update":
	default:
		return "", kongrun.Usagef("invalid reason %q: want need_decision, interview_request or progress_update", in.Reason)
	}
	text, structured, err := contactViaCLI(e.ctx, in.Reason, in.Message, in.Interview)
	if err != nil {
		return "", err
	}
	return mcpserver.ContactText(text, structured), nil
}
