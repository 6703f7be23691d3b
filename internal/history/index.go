// Package history is the searchable copy of the broker's history: the
// delivered messages and topic records the broker keeps (wire.SubjHistory)
// caught up into a SQLite database with an FTS5 full-text index, under
// INTERCOM_HOME/index. The broker never indexes: whoever reads the history
// (intercom history, search, web) first catches the index up from the
// broker, page by page after the last cursor it holds. The index is a cache:
// lost or damaged, it is rebuilt from the broker's history; when the
// broker's history epoch changes (a purge, a forgotten session) it is
// emptied and read again. Several processes may share it (SQLite WAL).
package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver, with FTS5

	"github.com/intercom-dev/intercom/internal/paths"
)

// Index is an open history index.
type Index struct {
	db   *sql.DB
	path string

	mu         sync.Mutex
	stmts      map[string]*sql.Stmt // prepared once per query shape
	mergeAfter int                  // mergeAfter (smaller in tests)
}

// Path is where the index of home lives.
func Path(home string) string { return filepath.Join(home, "index", "history.db") }

// schemaVersion changes whenever the schema does: an index of another
// version is rebuilt.
const schemaVersion = "1"

const schema = `
CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries(
	rowid INTEGER PRIMARY KEY,
	cursor TEXT NOT NULL,
	kind TEXT NOT NULL,
	ident TEXT NOT NULL UNIQUE,
	at INTEGER NOT NULL,
	sent INTEGER NOT NULL,
	from_id TEXT NOT NULL, from_name TEXT NOT NULL,
	to_id TEXT NOT NULL, to_name TEXT NOT NULL,
	thread TEXT NOT NULL, topic TEXT NOT NULL, reply_to TEXT NOT NULL,
	body TEXT NOT NULL, attach TEXT NOT NULL, names TEXT NOT NULL,
	doc TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS entries_cursor ON entries(cursor);
CREATE INDEX IF NOT EXISTS entries_sent ON entries(sent);
CREATE INDEX IF NOT EXISTS entries_thread ON entries(thread);
CREATE INDEX IF NOT EXISTS entries_topic ON entries(topic);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(body, attach, names, content='entries', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2');
CREATE TRIGGER IF NOT EXISTS entries_ai AFTER INSERT ON entries BEGIN
	INSERT INTO fts(rowid, body, attach, names) VALUES (new.rowid, new.body, new.attach, new.names);
END;
CREATE TRIGGER IF NOT EXISTS entries_ad AFTER DELETE ON entries BEGIN
	INSERT INTO fts(fts, rowid, body, attach, names) VALUES ('delete', old.rowid, old.body, old.attach, old.names);
END;
`

// Open opens (creating, or rebuilding when damaged or of another schema)
// the index of home.
func Open(home string) (*Index, error) {
	path := Path(home)
	if err := paths.EnsurePrivateDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("history index: %w", err)
	}
	ix, err := open(path)
	if err == nil {
		return ix, nil
	}
	// Damaged or of another schema: it is a cache, start again.
	for _, suffix := range []string{"", "-wal", "-shm"} {
		_ = os.Remove(path + suffix)
	}
	return open(path)
}

func open(path string) (*Index, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600) // private before SQLite creates it
	if err != nil {
		return nil, fmt.Errorf("history index: %w", err)
	}
	f.Close()
	// A 16 MiB page cache per connection holds the full-text index's hot
	// pages of a large history (SQLite's default is 2 MiB).
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=cache_size(-16384)&_pragma=temp_store(MEMORY)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("history index %s: %w", path, err)
	}
	ix := &Index{db: db, path: path, stmts: map[string]*sql.Stmt{}, mergeAfter: mergeAfter}
	if err := ix.init(); err != nil {
		db.Close()
		return nil, fmt.Errorf("history index %s: %w", path, err)
	}
	return ix, nil
}

var errOtherSchema = errors.New("index of another schema")

func (ix *Index) init() error {
	ctx := context.Background()
	// An index of this schema is used as it is: no statement of the schema
	// is parsed again on every command's start.
	if v, err := ix.meta(ctx, ix.db, "schema"); err == nil && v == schemaVersion {
		return nil
	}
	if _, err := ix.db.ExecContext(ctx, schema); err != nil {
		return err
	}
	var v string
	err := ix.db.QueryRowContext(ctx, `SELECT v FROM meta WHERE k='schema'`).Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// Rank: text weighs most, then attachments, then names.
		if _, err := ix.db.ExecContext(ctx, `INSERT INTO fts(fts, rank) VALUES ('rank', 'bm25(4.0, 2.0, 1.0)')`); err != nil {
			return err
		}
		_, err = ix.db.ExecContext(ctx, `INSERT OR IGNORE INTO meta(k, v) VALUES ('schema', ?)`, schemaVersion)
		return err
	case err != nil:
		return err
	case v != schemaVersion:
		return fmt.Errorf("%w (%s)", errOtherSchema, v)
	}
	return nil
}

// Close closes the index.
func (ix *Index) Close() error {
	ix.mu.Lock()
	for _, st := range ix.stmts {
		st.Close()
	}
	ix.stmts = nil
	ix.mu.Unlock()
	return ix.db.Close()
}

// stmt returns q prepared (once for the index's life: parsing a full-text
// query costs about as much as running a selective one).
func (ix *Index) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if st, ok := ix.stmts[q]; ok {
		return st, nil
	}
	if ix.stmts == nil {
		return nil, errClosed
	}
	st, err := ix.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	ix.stmts[q] = st
	return st, nil
}

var errClosed = errors.New("history index closed")

func (ix *Index) meta(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, k string) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT v FROM meta WHERE k=?`, k).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}
