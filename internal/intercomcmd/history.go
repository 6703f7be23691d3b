package intercomcmd

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/history"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/internal/tty"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// HistoryCmd shows delivered messages and topic records in order.
type HistoryCmd struct {
	Session string `arg:"" optional:"" help:"Only what this session (id, name or id prefix) sent or received."`
	Thread  string `help:"Only this replace-mode thread, or this message id and the replies to it." placeholder:"T"`
	Topic   string `help:"Only this topic's records and wake-ups." placeholder:"T"`
	Since   string `help:"Only since then: a duration back (90m, 36h, 3d, 2w) or a date (2026-11-30)." placeholder:"D"`
	Limit   int    `short:"n" default:"50" help:"Show at most the newest N."`
}

// Help shows examples.
func (HistoryCmd) Help() string {
	return `Shows delivered messages and published topic records, oldest first, from the
history the broker keeps for historyMaxAgeMs (30 days by default) and up to
historyMaxBytes (512 MiB). The searchable index under INTERCOM_HOME/index is
caught up from the broker first (and rebuilt if it was lost).

Examples:
  intercom history                     # the newest 50 entries
  intercom history worker --since 2d   # what worker sent or received
  intercom history --topic build --json`
}

// Run lists.
func (h *HistoryCmd) Run(e *env) error {
	f := history.Filter{Session: h.Session, Thread: h.Thread, Topic: h.Topic, Limit: h.Limit}
	if err := e.since(h.Since, &f); err != nil {
		return err
	}
	ix, err := e.historyIndex()
	if err != nil {
		return err
	}
	defer ix.Close()
	items, err := ix.History(e.ctx, f)
	if err != nil {
		return err
	}
	if e.g.JSON {
		return e.printJSON(schema.HistoryList{Items: items})
	}
	if len(items) == 0 {
		fmt.Fprintln(e.stdout, "No history.")
	}
	for _, it := range items {
		printItem(e.stdout, it, render.Text(itemText(it)))
	}
	return nil
}

// SearchCmd finds messages by the words in them.
type SearchCmd struct {
	Query []string `arg:"" help:"Words that must all occur (in the text, attachments or names); word* matches a prefix."`
	From  string   `help:"Only messages from this session (id, name or id prefix)." placeholder:"S"`
	To    string   `help:"Only messages to this session." placeholder:"S"`
	Since string   `help:"Only since then: a duration back (90m, 36h, 3d, 2w) or a date (2026-11-30)." placeholder:"D"`
	Limit int      `short:"n" default:"20" help:"Show at most the best N."`
}

// Help shows examples.
func (SearchCmd) Help() string {
	return `Finds delivered messages and topic records by the words in their text,
attachments and names, best match first, the matching part highlighted.

Examples:
  intercom search frobnicator
  intercom search "deploy tonight" --from planner --since 1w
  intercom search migrat* --json`
}

// Run searches.
func (s *SearchCmd) Run(e *env) error {
	f := history.Filter{From: s.From, To: s.To, Limit: s.Limit}
	if err := e.since(s.Since, &f); err != nil {
		return err
	}
	query := strings.Join(s.Query, " ")
	ix, err := e.historyIndex()
	if err != nil {
		return err
	}
	defer ix.Close()
	items, err := ix.Search(e.ctx, query, f)
	if err != nil {
		if strings.Contains(err.Error(), history.ErrEmptyQuery.Error()) {
			return kongrun.Usagef("search: %v", err)
		}
		return err
	}
	if e.g.JSON {
		return e.printJSON(schema.SearchResults{Query: query, Items: items})
	}
	if len(items) == 0 {
		fmt.Fprintf(e.stdout, "Nothing found for %q.\n", query)
	}
	start, end := "**", "**"
	if tty.Colour(e.stdout) {
		start, end = "\x1b[1;33m", "\x1b[0m"
	}
	for _, it := range items {
		printItem(e.stdout, it, Highlight(it.Snippet, render.Line, start, end))
	}
	return nil
}

// Highlight renders a snippet: each part escaped by esc, each match
// between start and end.
func Highlight(snippet string, esc func(string) string, start, end string) string {
	var b strings.Builder
	for i, part := range strings.Split(snippet, history.MarkStart) {
		if i == 0 {
			b.WriteString(esc(part))
			continue
		}
		hit, rest, _ := strings.Cut(part, history.MarkEnd)
		b.WriteString(start + esc(hit) + end + esc(rest))
	}
	return b.String()
}

// PurgeCmd removes kept history.
type PurgeCmd struct {
	Session string `arg:"" optional:"" help:"Only what this session (id, name or id prefix) sent or received."`
	Before  string `help:"Only what was kept before then: a duration back (3d, 2w) or a date." placeholder:"D"`
	Yes     bool   `short:"y" help:"Do not ask for confirmation."`
}

// Help shows examples.
func (PurgeCmd) Help() string {
	return `Removes delivered messages and topic records from the broker's history (and
so from every search index, which is rebuilt). Undelivered messages are not
touched. intercom forget removes a session's history with the session.

Examples:
  intercom purge --yes                 # all of it
  intercom purge old-worker --yes
  intercom purge --before 2w --yes`
}

// Run purges.
func (p *PurgeCmd) Run(e *env) error {
	var before time.Time
	if p.Before != "" {
		t, err := history.ParseSince(p.Before, time.Now())
		if err != nil {
			return kongrun.Usagef("purge: %v", strings.Replace(err.Error(), "--since", "--before", 1))
		}
		before = t
	}
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	sid, what := "", "the whole history"
	if p.Session != "" {
		s, err := c.Find(e.ctx, p.Session)
		if err != nil {
			return fmt.Errorf("purge: %w", err)
		}
		sid, what = s.ID, fmt.Sprintf("the history of %s (%s)", s.Name, s.ID)
	}
	if !p.Yes {
		if !tty.Is(e.stdin) {
			return kongrun.Usagef("purge: refusing without --yes (stdin is not a terminal)")
		}
		if !e.confirm(fmt.Sprintf("Remove %s?", what)) {
			return kongrun.Exit(1, "purge cancelled")
		}
	}
	n, err := c.PurgeHistory(e.ctx, sid, before)
	if err != nil {
		return fmt.Errorf("purge: %w", err)
	}
	if e.g.JSON {
		return e.printJSON(wire.HistoryPurgeReply{Removed: n})
	}
	fmt.Fprintf(e.stdout, "Removed %d history entries.\n", n)
	return nil
}

// since sets f.Since from a --since value.
func (e *env) since(s string, f *history.Filter) error {
	if s == "" {
		return nil
	}
	t, err := history.ParseSince(s, time.Now())
	if err != nil {
		return kongrun.Usagef("%v", err)
	}
	f.Since = t
	return nil
}

// historyIndex opens the history index and catches it up with the broker.
//
// history and search are one-shot: their garbage is collected only once the
// heap reaches 64 MiB (a rebuild's catch-up may get there), not from 4 MiB
// on, which costs a search about a fifth of its CPU (docs/web.md).
func (e *env) historyIndex() (*history.Index, error) {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(64 << 20)
	c, err := e.connect()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return openSynced(e, c)
}

func openSynced(e *env, c *intercom.Client) (*history.Index, error) {
	ix, err := history.Open(c.Home())
	if err != nil {
		return nil, err
	}
	if _, err := ix.Sync(e.ctx, c); err != nil {
		ix.Close()
		return nil, err
	}
	return ix, nil
}

// itemText is what an entry says.
func itemText(it history.Item) string {
	if it.Record != nil {
		return it.Record.Message
	}
	return it.Message.Text
}

// printItem prints one entry's header line and its (rendered) text.
func printItem(w io.Writer, it history.Item, text string) {
	at := it.At.Local().Format("2006-01-02 15:04:05")
	if r := it.Record; r != nil {
		fmt.Fprintf(w, "%s  %s  topic %s %s", at, render.Line(it.FromName), render.Line(r.Topic), r.Event)
		if r.Resource != "" {
			fmt.Fprintf(w, " %s", render.Line(r.Resource))
		}
		fmt.Fprintf(w, "\n    %s\n", indent(text))
		return
	}
	m := it.Message
	kind := ""
	switch {
	case m.ExpectsReply:
		kind = " (ask)"
	case m.ReplyTo != "":
		kind = " (reply to " + m.ReplyTo + ")"
	case m.Topic != "":
		kind = " (topic " + render.Line(m.Topic) + " " + m.Event + ")"
	}
	fmt.Fprintf(w, "%s  %s → %s%s  %s\n    %s\n", at, render.Line(it.FromName), render.Line(it.ToName), kind, m.ID, indent(text))
}

func indent(s string) string { return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") }
