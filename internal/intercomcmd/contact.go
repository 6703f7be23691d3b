package intercomcmd

import (
	"fmt"
	"os"
	"strings"

	"github.com/intercom-dev/intercom/internal/bounded"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// ContactCmd lets a supervised child reach its supervisor.
type ContactCmd struct {
	Reason    string `required:"" enum:"need_decision,interview_request,progress_update" help:"need_decision and interview_request block until answered; progress_update does not."`
	Message   string `short:"m" help:"The decision request, interview note, or progress update." placeholder:"TEXT"`
	Interview string `help:"Interview JSON file ('-' for stdin): {title?, description?, questions:[{id,type,question,options?,context?}]}." placeholder:"FILE|-"`
}

// Help shows examples.
func (ContactCmd) Help() string {
	return `Only inside a run started by 'agent-runs start' (INTERCOM_SUPERVISOR,
INTERCOM_RUN_ID, INTERCOM_CHILD_AGENT and INTERCOM_CHILD_INDEX set).

need_decision and interview_request save the question durably first, then
steer the supervisor, then wait with no timeout: supervisor or broker
restarts do not end the wait. The answer is printed as
"Reply from supervisor: …"; with --json an interview answer that parses as
{"responses":[{"id","value"}]} is returned as structured_reply (or
structured_reply_error). progress_update returns at once; it steers (the
supervisor sees it at its next tool boundary).

Examples:
  intercom contact-supervisor --reason need_decision -m "403 or 401 for expired tokens?"
  intercom contact-supervisor --reason interview_request -m "Before I migrate:" --interview questions.json
  intercom contact-supervisor --reason progress_update -m "Bug is in the retry wrapper, fixing it there."`
}

// Run contacts the supervisor.
func (cc *ContactCmd) Run(e *env) error {
	ce, err := runs.ChildFromEnv(os.Getenv)
	if err != nil {
		return kongrun.Usage(err)
	}
	var iv *runs.Interview
	switch cc.Reason {
	case runs.ReasonInterview:
		if cc.Interview == "" {
			return kongrun.Usagef("interview_request requires --interview FILE|-")
		}
		var data []byte
		if cc.Interview == "-" {
			data, err = bounded.Read(e.stdin, "--interview - (stdin)", wire.MaxMessageBytes)
		} else {
			data, err = bounded.ReadFile(cc.Interview, "--interview "+cc.Interview, wire.MaxMessageBytes)
		}
		if err != nil {
			return kongrun.Usagef("read interview: %w", err)
		}
		if iv, err = runs.ParseInterview(data); err != nil {
			return kongrun.Usage(err)
		}
	default:
		if cc.Interview != "" {
			return kongrun.Usagef("--interview is only valid with --reason interview_request")
		}
		if strings.TrimSpace(cc.Message) == "" {
			return kongrun.Usagef("%s requires --message", cc.Reason)
		}
	}
	if cc.Message != "" { // optional with an interview; required (above) otherwise
		if err := checkMessage(cc.Message, nil); err != nil {
			return err
		}
	}
	connect := func() (*intercom.Client, error) { return e.connect() }
	ct, err := runs.Reach(e.ctx, connect, ce, e.g.Session)
	if err != nil {
		return err
	}
	defer ct.Close()
	if cc.Reason == runs.ReasonProgress {
		res, err := ct.Progress(e.ctx, cc.Message)
		if err != nil {
			return err
		}
		if e.g.JSON {
			return e.printJSON(schema.ProgressAccepted{Accepted: true, ID: res.ID, Supervisor: ct.Supervisor.Name})
		}
		fmt.Fprintf(e.stdout, "Progress update accepted for supervisor %s. It steers at the supervisor's next tool boundary; broker acceptance does not confirm the supervisor has read or acted on it.\n", ct.Supervisor.Name)
		return nil
	}
	r, err := ct.Ask(e.ctx, cc.Reason, cc.Message, iv, e.log)
	if err != nil {
		return err
	}
	out := schema.SupervisorAnswer{Reply: r.Text, QuestionID: r.Question.ID, RunID: r.Question.RunID, StructuredReply: r.Structured}
	if r.StructuredErr != nil {
		out.StructuredReplyError = r.StructuredErr.Error()
	}
	if e.g.JSON {
		return e.printJSON(out)
	}
	fmt.Fprintf(e.stdout, "Reply from supervisor: %s\n", render.Text(r.Text))
	if out.StructuredReplyError != "" {
		fmt.Fprintf(e.stdout, "(structured reply not usable: %s)\n", out.StructuredReplyError)
	}
	return nil
}
