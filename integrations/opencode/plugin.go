// Package opencode carries the OpenCode plugin (intercom.ts) into the
// intercom binary, so that `intercom install opencode` can write it.
package opencode

import (
	_ "embed"
	"strconv"
	"strings"
)

//go:embed intercom.ts
var source string

// Marker is in every plugin file install writes (uninstall removes only those).
const Marker = "intercom-opencode-plugin"

// binPlaceholder is where the plugin names the intercom binary.
const binPlaceholder = `"__INTERCOM_BIN__"`

// Plugin is the plugin's source with intercomBin as the binary it runs.
func Plugin(intercomBin string) []byte {
	return []byte(strings.Replace(source, binPlaceholder, strconv.Quote(intercomBin), 1))
}

// Command is the intercom binary a plugin file written by Plugin runs
// (false when data is no such file or names none).
func Command(data []byte) (string, bool) {
	prefix := source[:strings.Index(source, binPlaceholder)]
	prefix = prefix[strings.LastIndex(prefix, "\n")+1:] // the line up to the binary
	s := string(data)
	i := strings.Index(s, prefix)
	if i < 0 || !strings.Contains(s, Marker) {
		return "", false
	}
	q, err := strconv.QuotedPrefix(s[i+len(prefix):])
	if err != nil {
		return "", false
	}
	bin, err := strconv.Unquote(q)
	return bin, err == nil && bin != strings.Trim(binPlaceholder, `"`)
}
