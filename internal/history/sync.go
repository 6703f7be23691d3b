package history

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Source is where the history comes from: the broker (an *intercom.Client).
type Source interface {
	HistoryPage(ctx context.Context, after string, limit int) (wire.HistoryReply, error)
	List(ctx context.Context, o intercom.ListOptions) ([]wire.Session, error)
}

// maxSyncPages bounds one catch-up (a page is up to wire.MaxHistoryPage
// entries).
const maxSyncPages = 10000

// mergeAfter: a catch-up that added this many entries (a rebuilt index, a
// long absence) merges the full-text index into one segment, which halves
// a two-word query's time over 100,000 messages (nine segments to one). A
// smaller catch-up leaves the merging to FTS5's automerge.
const mergeAfter = 5000

// Sync catches the index up with the broker's history and reports how many
// entries it added.
func (ix *Index) Sync(ctx context.Context, src Source) (int, error) {
	added, err := ix.catchUp(ctx, src)
	if err == nil && added >= ix.mergeAfter {
		if _, err := ix.db.ExecContext(ctx, `INSERT INTO fts(fts) VALUES ('optimize')`); err != nil {
			return added, fmt.Errorf("merge history index: %w", err)
		}
	}
	return added, err
}

func (ix *Index) catchUp(ctx context.Context, src Source) (int, error) {
	var names map[string]string // read once, and only when there is something to add
	added := 0
	for range maxSyncPages {
		epoch, err := ix.meta(ctx, ix.db, "epoch")
		if err != nil {
			return added, err
		}
		cursor, err := ix.meta(ctx, ix.db, "cursor")
		if err != nil {
			return added, err
		}
		page, err := src.HistoryPage(ctx, cursor, 0)
		if err != nil {
			return added, fmt.Errorf("read history: %w", err)
		}
		if names == nil && len(page.Entries) > 0 {
			names = sessionNames(ctx, src)
		}
		n, err := ix.apply(ctx, epoch, cursor, page, names)
		if err != nil {
			return added, err
		}
		added += n
		if !page.More {
			return added, nil
		}
	}
	return added, nil
}

// sessionNames maps the broker's sessions' ids to their names (none if the
// broker cannot list them: an entry then shows the recipient's id).
func sessionNames(ctx context.Context, src Source) map[string]string {
	names := map[string]string{}
	if ss, err := src.List(ctx, intercom.ListOptions{Scope: "all", IncludeDisconnected: true}); err == nil {
		for _, s := range ss {
			names[s.ID] = s.Name
		}
	}
	return names
}

// apply stores one page read after cursor under epoch, in one transaction;
// a page of another epoch first empties the index (and adds nothing: the
// next page starts again from the oldest entry).
func (ix *Index) apply(ctx context.Context, epoch, cursor string, page wire.HistoryReply, names map[string]string) (int, error) {
	if epoch == page.Epoch && len(page.Entries) == 0 && !ix.holdsBefore(ctx, page.First) {
		return 0, nil // nothing changed: no write transaction
	}
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	// Another process may have moved the index on meanwhile: then this page
	// is stale, and the next round reads from where it got to.
	if now, err := ix.meta(ctx, tx, "cursor"); err != nil || now != cursor {
		return 0, err
	}
	if epoch != page.Epoch {
		if _, err := tx.ExecContext(ctx, `DELETE FROM entries`); err != nil {
			return 0, err
		}
		if err := setMeta(ctx, tx, "epoch", page.Epoch); err != nil {
			return 0, err
		}
		if err := setMeta(ctx, tx, "cursor", ""); err != nil {
			return 0, err
		}
		return 0, tx.Commit()
	}
	// What the broker no longer keeps (age, size) leaves the index.
	if page.First == "" {
		_, err = tx.ExecContext(ctx, `DELETE FROM entries`)
	} else {
		_, err = tx.ExecContext(ctx, `DELETE FROM entries WHERE cursor < ?`, page.First)
	}
	if err != nil {
		return 0, err
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO entries(cursor, kind, ident, at, sent, from_id, from_name, to_id, to_name, thread, topic, reply_to, body, attach, names, doc)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(ident) DO NOTHING`)
	if err != nil {
		return 0, err
	}
	defer ins.Close()
	added := 0
	for _, e := range page.Entries {
		r, ok := rowOf(e, names)
		if !ok {
			continue
		}
		res, err := ins.ExecContext(ctx, r.cursor, r.kind, r.ident, r.at, r.sent, r.fromID, r.fromName, r.toID, r.toName, r.thread, r.topic, r.replyTo, r.body, r.attach, r.names, r.doc)
		if err != nil {
			return 0, err
		}
		if n, _ := res.RowsAffected(); n > 0 {
			added++
		}
		cursor = e.Cursor
	}
	if err := setMeta(ctx, tx, "cursor", cursor); err != nil {
		return 0, err
	}
	return added, tx.Commit()
}

// holdsBefore reports whether the index holds an entry the broker no
// longer keeps (kept before first; any entry when first is "").
func (ix *Index) holdsBefore(ctx context.Context, first string) bool {
	q, args := `SELECT EXISTS(SELECT 1 FROM entries)`, []any{}
	if first != "" {
		q, args = `SELECT EXISTS(SELECT 1 FROM entries WHERE cursor < ?)`, []any{first}
	}
	var held bool
	if err := ix.db.QueryRowContext(ctx, q, args...).Scan(&held); err != nil {
		return true // let the transaction find out
	}
	return held
}

func setMeta(ctx context.Context, tx *sql.Tx, k, v string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO meta(k, v) VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET v=excluded.v`, k, v)
	return err
}

// searchable returns the three texts of an entry that a search matches
// (the index's columns body, attach and names): what it says, its
// attachments (a record: its resource), and its names (toName: the
// recipient's name as indexed).
func searchable(e wire.HistoryEntry, toName string) (body, attach, names string) {
	if m := e.Message; m != nil {
		var att []string
		for _, a := range m.Attachments {
			att = append(att, a.Name, a.Path, a.Content)
		}
		return m.Text, strings.Join(att, "\n"), strings.Join([]string{m.From.Name, toName, m.Topic, m.Thread}, " ")
	}
	if rec := e.Record; rec != nil {
		return rec.Message, rec.Resource, strings.Join([]string{rec.From.Name, rec.Topic, rec.Event, rec.Resource}, " ")
	}
	return "", "", ""
}

// row is one entry as the index stores it.
type row struct {
	cursor, kind, ident            string
	at, sent                       int64
	fromID, fromName, toID, toName string
	thread, topic, replyTo         string
	body, attach, names, doc       string
}

func rowOf(e wire.HistoryEntry, names map[string]string) (row, bool) {
	r := row{cursor: e.Cursor, kind: e.Kind, at: e.At.UnixNano()}
	switch {
	case e.Message != nil:
		m := e.Message
		r.ident, r.sent = m.ID, m.SentAt.UnixNano()
		r.fromID, r.fromName, r.toID = m.From.ID, m.From.Name, m.To
		r.toName = names[m.To]
		if r.toName == "" {
			r.toName = m.To
		}
		r.thread, r.topic, r.replyTo = m.Thread, m.Topic, m.ReplyTo
	case e.Record != nil:
		rec := e.Record
		r.ident = fmt.Sprintf("record/%s/%d", rec.Topic, rec.Seq)
		r.sent = rec.PublishedAt.UnixNano()
		r.fromID, r.fromName, r.topic = rec.From.ID, rec.From.Name, rec.Topic
	default:
		return r, false
	}
	r.body, r.attach, r.names = searchable(e, r.toName)
	doc, err := json.Marshal(e)
	if err != nil {
		return r, false
	}
	r.doc = string(doc)
	return r, true
}
