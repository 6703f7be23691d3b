package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	vcs := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261201120000-abcdef012345+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abcdef0123456789"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-12-01T12:00:00Z"}}}
	cases := []struct {
		name             string
		version, commit  string
		bi               *debug.BuildInfo
		wantV, wantC     string
		wantMod          bool
		wantStringPrefix string
	}{
		{"stamped wins", "v1.2.3", "0123456789abcdef", vcs, "v1.2.3", "0123456789abcdef", true, "v1.2.3 (commit 0123456789ab-dirty, go1.26.8"},
		{"toolchain fallback", "", "", vcs, vcs.Main.Version, "abcdef0123456789", true, vcs.Main.Version + " (commit abcdef012345-dirty"},
		{"devel build without vcs", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev", "", false, "dev (commit unknown"},
		{"no build info", "", "", nil, "dev", "", false, "dev (commit unknown"},
	}
	for _, c := range cases {
		in := resolve(c.version, c.commit, c.bi)
		if in.Version != c.wantV || in.Commit != c.wantC || in.Modified != c.wantMod {
			t.Errorf("%s: got %+v, want version %q commit %q modified %t", c.name, in, c.wantV, c.wantC, c.wantMod)
		}
		if s := in.String(); !strings.HasPrefix(s, c.wantStringPrefix) {
			t.Errorf("%s: String() = %q, want prefix %q", c.name, s, c.wantStringPrefix)
		}
		if in.Go == "" || in.OS == "" || in.Arch == "" {
			t.Errorf("%s: missing go/os/arch in %+v", c.name, in)
		}
	}
}
