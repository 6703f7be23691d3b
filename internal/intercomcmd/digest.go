package intercomcmd

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/intercom-dev/intercom/internal/agentsession"
	"github.com/intercom-dev/intercom/internal/bounded"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// DigestCmd renders messages an extension holds as one boundary's digest
// (render.BuildDigest), for harnesses whose thin adapter hands messages
// over itself (Pi).
type DigestCmd struct {
	Bytes int `help:"The digest's size budget (default: config digestBytes)." placeholder:"N"`
}

// Help shows examples.
func (DigestCmd) Help() string {
	return `Reads {"messages":[...]} (the attach --json message shape) on stdin and
prints them as one digest: most urgent first (from a person, from this
run's supervisor, asks, blockers and decisions, the rest), as many as fit
in the budget, and a last line saying how many more wait. With --json:
{"text":"...","shown":[ids],"waiting":N}; only the shown ones are in text.

Examples:
  intercom --json digest < waiting.json
  intercom digest --bytes 4000 < waiting.json`
}

// Run renders.
func (d *DigestCmd) Run(e *env) error {
	budget := d.Bytes
	if budget == 0 {
		budget = int(e.cfg.DigestBytes)
	}
	if budget < 0 {
		return kongrun.Usagef("--bytes must be >= 0")
	}
	raw, err := bounded.Read(e.stdin, "messages (stdin)", 64*wire.MaxMessageBytes)
	if err != nil {
		return err
	}
	var in schema.Messages
	if err := json.Unmarshal(raw, &in); err != nil {
		return kongrun.Usagef("stdin is not {\"messages\":[...]}: %v", err)
	}
	msgs := make([]wire.Message, len(in.Messages))
	rendered := make(map[string]string, len(in.Messages))
	for i, j := range in.Messages {
		msgs[i] = fromJSON(j)
		rendered[j.ID] = j.Rendered
	}
	renderOne := func(m wire.Message) string {
		if r := rendered[m.ID]; r != "" {
			return r
		}
		return render.ForAgent(m, e.cfg.ReplyHint)
	}
	dg := render.BuildDigest(msgs, render.DigestOptions{Render: renderOne, Budget: budget, Supervisor: agentsession.SupervisorFromEnv()})
	if dg.Oversize != nil { // alone bigger than the budget: it goes whole, alone
		dg = render.BuildDigest([]wire.Message{*dg.Oversize}, render.DigestOptions{Render: renderOne, Budget: len(renderOne(*dg.Oversize)) + 2*render.DigestRoom})
		dg.Text += render.WaitingLine(len(msgs) - 1)
		dg.Waiting = len(msgs) - 1
	}
	out := schema.Digest{Text: dg.Text, Shown: dg.Shown, Waiting: dg.Waiting}
	if out.Shown == nil {
		out.Shown = []string{}
	}
	if e.g.JSON {
		return kongrun.PrintJSON(e.stdout, out)
	}
	_, err = io.WriteString(e.stdout, out.Text)
	if err != nil {
		return fmt.Errorf("write digest: %w", err)
	}
	return nil
}
