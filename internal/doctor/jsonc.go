package doctor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/intercom-dev/intercom/internal/bounded"
)

// maxSettings is the largest settings file read.
const maxSettings = 8 << 20

// settingsFile is one JSON settings file of a harness.
type settingsFile struct {
	path string
	doc  map[string]any // nil when absent or broken
	err  error          // why it cannot be read or parsed
}

// readJSONC reads a JSON settings file that may hold comments and
// trailing commas (Gemini CLI and OpenCode accept both); ok is false when
// the file does not exist.
func readJSONC(path string) (settingsFile, bool) {
	f := settingsFile{path: path}
	data, err := bounded.ReadFile(path, path, maxSettings)
	if errors.Is(err, fs.ErrNotExist) {
		return f, false
	}
	if err != nil {
		f.err = err
		return f, true
	}
	var v any
	if err := json.Unmarshal(stripJSONC(data), &v); err != nil {
		f.err = fmt.Errorf("%s is not valid JSON: %w", path, err)
		return f, true
	}
	m, ok := v.(map[string]any)
	if !ok && v != nil {
		f.err = fmt.Errorf("%s: %w", path, errNotObject)
		return f, true
	}
	f.doc = m
	return f, true
}

// stripJSONC blanks out // and /* */ comments outside strings and drops
// commas that only precede a closing bracket, keeping byte offsets (so a
// JSON error's offset is the file's).
func stripJSONC(data []byte) []byte {
	out := []byte(string(data))
	inString, escaped := false, false
	lastComma := -1
	var prev byte // the last significant byte outside strings and comments
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString, lastComma, prev = true, -1, c
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			out[i], out[i+1] = ' ', ' '
			for i += 2; i < len(out) && !(out[i] == '*' && i+1 < len(out) && out[i+1] == '/'); i++ {
				if out[i] != '\n' {
					out[i] = ' '
				}
			}
			if i+1 < len(out) {
				out[i], out[i+1] = ' ', ' '
				i++
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		case c == ',' && prev != '{' && prev != '[' && prev != ',':
			lastComma, prev = i, c
		case c == '}' || c == ']':
			if lastComma >= 0 {
				out[lastComma] = ' '
			}
			lastComma, prev = -1, c
		default:
			lastComma, prev = -1, c
		}
	}
	return out
}
