package history

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	json "github.com/goccy/go-json"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Highlight markers: Snippet wraps each matching part in MarkStart and
// MarkEnd (control characters that never occur in a message's text as
// shown), for the caller to render (bold on a terminal, <mark> on a page).
const (
	MarkStart = "\x02"
	MarkEnd   = "\x03"
)

// Item is one entry found: the entry as the broker kept it, the names of
// its sender and recipient, and (search) the matching part and its rank.
type Item struct {
	wire.HistoryEntry
	FromName string  `json:"from_name"`
	ToName   string  `json:"to_name,omitempty"`
	Snippet  string  `json:"snippet,omitempty"`
	Rank     float64 `json:"rank,omitempty"`
}

// Filter narrows a search or a history listing. Session, From and To match
// a session's id, id prefix or name.
type Filter struct {
	Session string // sent or received by it
	From    string
	To      string
	Thread  string // a replace-mode thread, or a message id and its replies
	Topic   string
	Since   time.Time
	Limit   int // 0: DefaultLimit
}

// DefaultLimit is how many items a query returns by default.
const DefaultLimit = 50

func (f Filter) where() (string, []any) {
	var cond []string
	var args []any
	who := func(col, v string) string { // a session by name, id or id prefix
		args = append(args, v, v, escapeLike(v)+"%")
		return fmt.Sprintf("(e.%s_name = ? OR e.%s_id = ? OR e.%s_id LIKE ? ESCAPE '\\')", col, col, col)
	}
	if f.Session != "" {
		from := who("from", f.Session)
		cond = append(cond, "("+from+" OR "+who("to", f.Session)+")")
	}
	if f.From != "" {
		cond = append(cond, who("from", f.From))
	}
	if f.To != "" {
		cond = append(cond, who("to", f.To))
	}
	if f.Thread != "" {
		// A replace-mode thread, or an ask and the replies to it.
		cond, args = append(cond, "(e.thread = ? OR e.ident = ? OR e.reply_to = ?)"), append(args, f.Thread, f.Thread, f.Thread)
	}
	if f.Topic != "" {
		cond, args = append(cond, "e.topic = ?"), append(args, f.Topic)
	}
	if !f.Since.IsZero() {
		cond, args = append(cond, "e.sent >= ?"), append(args, f.Since.UnixNano())
	}
	if len(cond) == 0 {
		return "1", nil
	}
	return strings.Join(cond, " AND "), args
}

func (f Filter) limit() int {
	if f.Limit <= 0 {
		return DefaultLimit
	}
	return f.Limit
}

func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// Search finds the entries whose text, attachments or names hold every word
// of query (a word ending in * matches as a prefix), best first.
func (ix *Index) Search(ctx context.Context, query string, f Filter) ([]Item, error) {
	match := matchExpr(query)
	if match == "" {
		return nil, fmt.Errorf("search: %w", ErrEmptyQuery)
	}
	where, args := f.where()
	// The best rows by rank first (bm25, FTS5's own order), then their
	// documents: a common word matches many rows, and only the best are
	// read. Without a filter the ranking reads the full-text index alone.
	// The matching part is marked here (Snippet), not by FTS5's snippet(),
	// which costs a scan of every matching row's text.
	best := `SELECT rowid AS id, rank AS r FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT ?`
	if where != "1" {
		best = `SELECT fts.rowid AS id, rank AS r FROM fts CROSS JOIN entries e ON e.rowid = fts.rowid
			WHERE fts MATCH ? AND ` + where + ` ORDER BY rank LIMIT ?`
	}
	st, err := ix.stmt(ctx, `SELECT e.doc, e.from_name, e.to_name, b.r FROM (`+best+`) b
		CROSS JOIN entries e ON e.rowid = b.id ORDER BY b.r`)
	if err != nil {
		return nil, fmt.Errorf("search history index: %w", err)
	}
	rows, err := st.QueryContext(ctx, append(append([]any{match}, args...), f.limit())...)
	if err != nil {
		return nil, fmt.Errorf("search history index: %w", err)
	}
	defer rows.Close()
	terms := queryTerms(query)
	out := []Item{}
	for rows.Next() {
		var doc string
		var it Item
		var rank float64
		if err := rows.Scan(&doc, &it.FromName, &it.ToName, &rank); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(doc), &it.HistoryEntry); err != nil {
			continue
		}
		it.Rank = -rank // bm25: lower is better; Rank: higher is
		// The texts from the entry itself, not read again from the index.
		body, attach, names := searchable(it.HistoryEntry, it.ToName)
		it.Snippet = Snippet(body, terms, snippetWords)
		if !strings.Contains(it.Snippet, MarkStart) {
			for _, other := range []string{attach, names} {
				if s := Snippet(other, terms, snippetWords); strings.Contains(s, MarkStart) {
					it.Snippet = s
					break
				}
			}
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// ErrEmptyQuery: a search without a word to look for.
var ErrEmptyQuery = fmt.Errorf("no word to search for")

// History lists the entries that pass f in the order they were sent, the
// newest f.Limit of them.
func (ix *Index) History(ctx context.Context, f Filter) ([]Item, error) {
	where, args := f.where()
	q := `SELECT doc, from_name, to_name FROM (SELECT e.* FROM entries e WHERE ` + where + ` ORDER BY e.sent DESC, e.cursor DESC LIMIT ?) ORDER BY sent, cursor`
	return ix.items(ctx, q, append(args, f.limit())...)
}

// Count returns how many entries the index holds.
func (ix *Index) Count(ctx context.Context) (int, error) {
	var n int
	err := ix.db.QueryRowContext(ctx, `SELECT count(*) FROM entries`).Scan(&n)
	return n, err
}

func (ix *Index) items(ctx context.Context, q string, args ...any) ([]Item, error) {
	rows, err := ix.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("query history index: %w", err)
	}
	defer rows.Close()
	out := []Item{}
	for rows.Next() {
		var doc string
		var it Item
		if err := rows.Scan(&doc, &it.FromName, &it.ToName); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(doc), &it.HistoryEntry); err != nil {
			continue
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// matchExpr turns a person's words into an FTS5 expression: every word
// must occur (each quoted, so that punctuation is no syntax), a trailing *
// makes it a prefix.
func matchExpr(query string) string {
	var terms []string
	for _, w := range strings.FieldsFunc(query, func(r rune) bool { return unicode.IsSpace(r) }) {
		prefix := strings.HasSuffix(w, "*")
		w = strings.TrimRight(w, "*")
		w = strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return r
			}
			return ' '
		}, w)
		for _, part := range strings.Fields(w) {
			terms = append(terms, `"`+part+`"`)
		}
		if prefix && len(terms) > 0 {
			terms[len(terms)-1] += "*"
		}
	}
	return strings.Join(terms, " ")
}

// After lists the entries indexed after cursor ("" for all), in the order
// they were kept, the newest limit of them.
func (ix *Index) After(ctx context.Context, cursor string, limit int) ([]Item, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	q := `SELECT doc, from_name, to_name FROM (SELECT doc, from_name, to_name, cursor FROM entries WHERE cursor > ? ORDER BY cursor DESC LIMIT ?) ORDER BY cursor`
	return ix.items(ctx, q, cursor, limit)
}
