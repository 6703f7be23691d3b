package bridgecmd

import (
	"fmt"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// StatusCmd shows the bridge as the local broker knows it.
type StatusCmd struct {
	Home string `env:"INTERCOM_HOME" help:"State directory of the local broker." placeholder:"DIR"`
}

// Help shows examples.
func (StatusCmd) Help() string {
	return `Shows this host's bridge (mode, address, link up or not, revocation list, last
error) and every bridged host: link up or down, sessions, our messages still
in its outbox, what it holds here (unread messages, topic records,
subscriptions) and the last error with it. Asks the local broker; it does
not start one.

Examples:
  intercom-bridge status
  intercom-bridge --json status`
}

// Run shows the status.
func (s *StatusCmd) Run(e *env) error {
	c, err := intercom.Connect(e.ctx, intercom.Options{Home: s.Home, NoSpawn: true, Name: "intercom-bridge-status", Logger: e.log})
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	defer c.Close()
	st, err := intercom.Call[wire.BridgeStatusReply](e.ctx, c, wire.SubjBridgeStatus, struct{}{})
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	return e.print(st, statusText(st))
}

func statusText(st *wire.BridgeStatusReply) string {
	var b strings.Builder
	if br := st.Bridge; br == nil {
		b.WriteString("Bridge: not running (no report from an intercom-bridge in the last few seconds)\n")
	} else {
		link := "up"
		if !br.Connected {
			link = "DOWN"
		}
		fmt.Fprintf(&b, "Bridge %s: %s %s, link %s since %s (pid %d)\n", render.Line(br.Name), render.Line(br.Mode), render.Line(br.Addr), link, br.Since.Local().Format(time.DateTime), br.Pid)
		fmt.Fprintf(&b, "  peers: %s\n  revocation list: %s\n", render.Line(br.Peers), render.Line(br.CRL))
		if br.LastError != "" {
			fmt.Fprintf(&b, "  last error (%s): %s\n", br.ErrorAt.Local().Format(time.TimeOnly), render.Line(br.LastError))
		}
	}
	if len(st.Hosts) == 0 {
		b.WriteString("Hosts: (none)")
		return b.String()
	}
	b.WriteString("Hosts:")
	for _, h := range st.Hosts {
		state := "up"
		if !h.LinkUp {
			state = "down"
		}
		seen := "never"
		if !h.LastReport.IsZero() {
			seen = humanize.Time(h.LastReport)
		}
		fmt.Fprintf(&b, "\n• %s — %s, %d sessions, outbox %d, here: %d unread (%s), %d topic records, %d subscriptions; reported %s",
			render.Line(h.Host), state, h.Sessions, h.Outbox, h.InboxQueued, humanize.IBytes(uint64(max(h.InboxBytes, 0))), h.Records, h.Subs, seen)
		if h.LastError != "" {
			fmt.Fprintf(&b, "\n  last error: %s", render.Line(h.LastError)) // another host's refusal, quoted
		}
	}
	return b.String()
}
