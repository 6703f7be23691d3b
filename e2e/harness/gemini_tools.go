//go:build harness

package harness

// geminiPin is the Gemini CLI the suite drives (a bump is this one line).
var geminiPin = pin{"gemini", "@google/gemini-cli", "0.61.0", "gemini"}

// geminiBin is the installed Gemini CLI; geminiSkip says why the Gemini
// tests skip when it is not installed (set by TestMain).
var geminiBin, geminiSkip string

// installGemini reuses or installs geminiPin in its own directory under
// cache. skip is set (and err nil) when npm cannot be reached.
func installGemini(cache string) (bin, skip string, err error) {
	if skip, err := installPins(cache, geminiPin); skip != "" || err != nil {
		return "", skip, err
	}
	bin = geminiPin.BinPath(cache)
	return bin, "", runsVersion(bin)
}
