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
