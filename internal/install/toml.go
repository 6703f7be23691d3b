package install

import (
	"bytes"
	"slices"

	"github.com/pelletier/go-toml/v2/unstable"
)

// tomlEntry is one definition in a TOML document, located by byte offsets
// so that an edit can change exactly it and leave the rest (comments,
// order, spacing) as the user wrote it.
type tomlEntry struct {
	Kind       unstable.Kind // Table, ArrayTable or KeyValue
	Path       []string      // full key path (a table's own path)
	Start, End int           // a KeyValue's "key = value"; a header's whole line
	Value      unstable.Kind // a KeyValue's value kind
	Data       string        // a scalar value
	Inline     []tomlEntry   // members of an inline-table value
}

// scanTOML parses data into its top-level definitions, in order.
func scanTOML(data []byte) ([]tomlEntry, error) {
	var p unstable.Parser
	p.Reset(data)
	var out []tomlEntry
	var table []string
	for p.NextExpression() {
		n := p.Expression()
		switch n.Kind {
		case unstable.Table, unstable.ArrayTable:
			it := n.Key()
			it.Next()
			off := int(it.Node().Raw.Offset)
			table = keyPath(nil, n.Key())
			out = append(out, tomlEntry{Kind: n.Kind, Path: table, Start: lineStart(data, off), End: lineEnd(data, off)})
		case unstable.KeyValue:
			out = append(out, keyValue(n, table))
		}
	}
	return out, p.Error()
}

func keyPath(prefix []string, it unstable.Iterator) []string {
	path := slices.Clone(prefix)
	for it.Next() {
		path = append(path, string(it.Node().Data))
	}
	return path
}

func keyValue(n *unstable.Node, table []string) tomlEntry {
	v := n.Value()
	e := tomlEntry{Kind: unstable.KeyValue, Path: keyPath(table, n.Key()), Start: int(n.Raw.Offset), End: int(n.Raw.Offset + n.Raw.Length), Value: v.Kind}
	switch v.Kind {
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			if c := it.Node(); c.Kind == unstable.KeyValue {
				e.Inline = append(e.Inline, keyValue(c, e.Path))
			}
		}
	case unstable.Array:
	default:
		e.Data = string(v.Data)
	}
	return e
}

// find returns the entry that defines path itself (a table header, or a
// key, at the top level or inside an inline table), or nil.
func find(entries []tomlEntry, path []string) *tomlEntry {
	for i := range entries {
		e := &entries[i]
		if slices.Equal(e.Path, path) {
			return e
		}
		if len(e.Inline) > 0 && hasPrefix(path, e.Path) {
			if m := find(e.Inline, path); m != nil {
				return m
			}
		}
	}
	return nil
}

// definesUnder reports whether any entry defines path or something in it.
func definesUnder(entries []tomlEntry, path []string) bool {
	for _, e := range entries {
		if hasPrefix(e.Path, path) || (len(e.Inline) > 0 && definesUnder(e.Inline, path)) {
			return true
		}
	}
	return false
}

func hasPrefix(path, prefix []string) bool {
	return len(path) >= len(prefix) && slices.Equal(path[:len(prefix)], prefix)
}

// tableEnd is where the table whose header is entries[i] ends: after the
// line of the last definition in it or in its sub-tables.
func tableEnd(data []byte, entries []tomlEntry, i int) int {
	end := entries[i].End
	for _, e := range entries[i+1:] {
		if e.Kind != unstable.KeyValue && !hasPrefix(e.Path, entries[i].Path) {
			break
		}
		end = lineEnd(data, e.End)
	}
	return end
}

func lineStart(data []byte, off int) int {
	return bytes.LastIndexByte(data[:off], '\n') + 1
}

// lineEnd is the offset just past the newline ending the line at off (or
// the end of data).
func lineEnd(data []byte, off int) int {
	if off > 0 && off <= len(data) && data[off-1] == '\n' {
		return off
	}
	if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(data)
}

// splice replaces data[start:end] with s.
func splice(data []byte, start, end int, s string) []byte {
	out := make([]byte, 0, len(data)+len(s))
	out = append(out, data[:start]...)
	out = append(out, s...)
	return append(out, data[end:]...)
}

// deleteLines removes the whole lines holding data[start:end].
func deleteLines(data []byte, start, end int) []byte {
	return splice(data, lineStart(data, start), lineEnd(data, max(end-1, start)), "")
}

// insertMember adds member to the inline table e, after its last member
// (so a TOML 1.1 trailing comma stays last).
func insertMember(data []byte, e *tomlEntry, member string) []byte {
	if len(e.Inline) == 0 {
		closing := e.End - 1
		return splice(data, closing, closing, " "+member+" ")
	}
	at := e.Inline[len(e.Inline)-1].End
	return splice(data, at, at, ", "+member)
}

// removeMember deletes member m of an inline table with the separator
// insertMember wrote beside it.
func removeMember(data []byte, m *tomlEntry) []byte {
	start, end := m.Start, m.End
	switch {
	case start >= 2 && string(data[start-2:start]) == ", ":
		start -= 2
	case start >= 1 && end < len(data) && data[start-1] == ' ' && data[end] == ' ':
		start, end = start-1, end+1
	case end+2 <= len(data) && string(data[end:end+2]) == ", ":
		end += 2
	}
	return splice(data, start, end, "")
}
