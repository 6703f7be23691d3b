package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `intercom install opencode` puts the plugin where OpenCode looks
// (OPENCODE_CONFIG_DIR, else XDG_CONFIG_HOME/opencode, else
// ~/.config/opencode), naming this binary; again it changes nothing, and
// uninstall removes the file.
func TestInstallOpenCodeFollowsConfigDir(t *testing.T) {
	t.Parallel()
	h := newH(t)
	home := t.TempDir()
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"OPENCODE_CONFIG_DIR=" + filepath.Join(home, "oc"), "XDG_CONFIG_HOME=" + filepath.Join(home, "xdg")}, filepath.Join(home, "oc")},
		{[]string{"OPENCODE_CONFIG_DIR=", "XDG_CONFIG_HOME=" + filepath.Join(home, "xdg")}, filepath.Join(home, "xdg", "opencode")},
		{[]string{"OPENCODE_CONFIG_DIR=", "XDG_CONFIG_HOME="}, filepath.Join(home, ".config", "opencode")},
	} {
		env := append([]string{"HOME=" + home}, c.env...)
		plugin := filepath.Join(c.want, "plugin", "intercom.ts")
		var out struct {
			Files []struct {
				Path    string `json:"path"`
				Changed bool   `json:"changed"`
			} `json:"files"`
		}
		for i, wantChanged := range []bool{true, false} {
			res, _ := h.runMeasured("intercom", nil, env, "--json", "install", "opencode")
			if res.Code != 0 {
				t.Fatalf("install opencode (%v): %+v", c.env, res)
			}
			if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
				t.Fatal(err)
			}
			if len(out.Files) != 1 || out.Files[0].Path != plugin || out.Files[0].Changed != wantChanged {
				t.Fatalf("install %d (%v): %+v, want %s changed=%v", i+1, c.env, out.Files, plugin, wantChanged)
			}
		}
		data, err := os.ReadFile(plugin)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), filepath.Join(binDir, "intercom")) {
			t.Errorf("the plugin does not name the intercom binary %s", filepath.Join(binDir, "intercom"))
		}
		if res, _ := h.runMeasured("intercom", nil, env, "uninstall", "opencode"); res.Code != 0 {
			t.Fatalf("uninstall opencode: %+v", res)
		}
		if _, err := os.Stat(plugin); !os.IsNotExist(err) {
			t.Errorf("uninstall left %s (%v)", plugin, err)
		}
	}
}
