// Package sessiontable prints the session table for a person's terminal
// (intercom list, status), apart from package render so that the hook
// path, which renders for agents only, does not link lipgloss.
package sessiontable

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"charm.land/lipgloss/v2"
	"charm.land/lipgloss/v2/table"
	"github.com/charmbracelet/x/ansi"

	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Options say how a person's terminal takes a table.
type Options struct {
	Colour bool // styles (bold header, dim disconnected rows, coloured status)
	Width  int  // terminal columns; 0: unknown, no limit
}

// SessionTable prints list/status rows for a person: one aligned row per
// session (name, target, status, project, pending asks, last intercom
// activity), this session marked, then the delivery guidance once.
func Print(w io.Writer, rows []wire.Session, o Options) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "No sessions. Start one with: intercom attach --name NAME")
		return
	}
	st := tableStyles(o.Colour)
	t := table.New().Border(lipgloss.HiddenBorder()).BorderTop(false).BorderBottom(false).
		BorderLeft(false).BorderRight(false).BorderHeader(false).BorderColumn(false).Wrap(false).
		Headers("NAME", "TARGET", "STATUS", "PROJECT", "ASKS", "LAST ACTIVITY")
	var self, offline, unreachable, busy bool
	for _, r := range rows {
		name := r.Name
		if r.Self {
			name, self = name+" *", true
		}
		status := render.ShownStatus(r)
		switch {
		case r.State == wire.StateUnreachable:
			unreachable = true
		case !r.Connected:
			offline = true
		case !r.AcceptsAsks:
			busy = true
		}
		t.Row(name, r.Target, status, projectName(r.Project), fmt.Sprint(r.PendingAsks), render.Ago(r.LastIntercomActivity))
	}
	t.StyleFunc(func(row, col int) lipgloss.Style {
		base := st.cell
		if col < 5 {
			base = base.PaddingRight(2)
		}
		if row == table.HeaderRow {
			return base.Inherit(st.header)
		}
		r := rows[row]
		switch {
		case !r.Connected:
			return base.Inherit(st.dim)
		case col == 2 && r.State == "idle":
			return base.Inherit(st.idle)
		case col == 2:
			return base.Inherit(st.busy)
		}
		return base
	})
	if o.Width > 0 {
		t.Width(o.Width)
	}
	for _, line := range strings.Split(strings.TrimRight(t.Render(), "\n"), "\n") {
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	fmt.Fprintln(w)
	notes := tableGuidance(offline, busy)
	if unreachable {
		notes = append(notes, "An unreachable session is on a bridged host whose link is down: what you send waits in the outbox until the link heals; ask is refused.")
	}
	if self {
		notes = append([]string{"* this session: not a target; answer asks to it with pending/reply."}, notes...)
	}
	width := o.Width
	if width <= 0 || width > 100 {
		width = 100
	}
	for _, n := range notes {
		for _, line := range strings.Split(ansi.Wordwrap(n, width, ""), "\n") {
			fmt.Fprintln(w, st.dim.Render(line))
		}
	}
}

// tableGuidance is Guidance said once for the whole table.
func tableGuidance(offline, busy bool) []string {
	out := []string{"send steers by default (reaches a session at its next tool boundary); --delivery queue waits until it is idle."}
	if busy {
		out = append(out, "ask waits for the reply; a busy session answers peer_busy unless --delivery steer.")
	} else {
		out = append(out, "ask only when you must wait for the reply.")
	}
	if offline {
		out = append(out, "A disconnected session keeps what you send in its inbox until it resumes; ask is refused.")
	}
	return out
}

// projectName is how a person knows a project: its directory's name.
func projectName(p string) string {
	if p == "" {
		return "-"
	}
	return filepath.Base(p)
}

type tstyles struct{ cell, header, dim, idle, busy lipgloss.Style }

func tableStyles(colour bool) tstyles {
	p := lipgloss.NewStyle()
	if !colour {
		return tstyles{p, p, p, p, p}
	}
	return tstyles{
		cell:   p,
		header: p.Bold(true),
		dim:    p.Foreground(lipgloss.Color("8")),
		idle:   p.Foreground(lipgloss.Color("10")),
		busy:   p.Foreground(lipgloss.Color("11")),
	}
}
