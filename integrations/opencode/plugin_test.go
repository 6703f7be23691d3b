package opencode

import "testing"

// Command reads back the binary Plugin wrote, and nothing from a file
// that is not such a plugin.
func TestCommandReadsPlugin(t *testing.T) {
	bin := `/opt/my "tools"/intercom`
	if got, ok := Command(Plugin(bin)); !ok || got != bin {
		t.Errorf("Command(Plugin(%q)) = %q, %v", bin, got, ok)
	}
	for name, data := range map[string]string{
		"the unfilled source": source,
		"a foreign plugin":    "export default async () => ({})\n",
		"empty":               "",
	} {
		if got, ok := Command([]byte(data)); ok {
			t.Errorf("Command(%s) = %q, true; want false", name, got)
		}
	}
}
