// Package buildinfo says which build of intercom is running. The Makefile
// stamps the version and commit with -ldflags -X; a build that was not
// stamped (go install ./cmd/..., go build) reports what the Go toolchain
// recorded in the binary (debug.ReadBuildInfo): the module version and the
// VCS revision of the checkout it was built from.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Stamped by the Makefile:
//
//	-X github.com/intercom-dev/intercom/internal/buildinfo.version=v1.2.3
//	-X github.com/intercom-dev/intercom/internal/buildinfo.commit=<sha>
var (
	version string
	commit  string
)

// Info is what `version --json` prints.
type Info struct {
	Version  string `json:"version"`            // "v1.2.3", a Go pseudo-version, or "dev"
	Commit   string `json:"commit"`             // full VCS revision, "" when unknown
	Modified bool   `json:"modified,omitempty"` // built from a checkout with uncommitted changes
	Built    string `json:"built,omitempty"`    // commit time (RFC 3339) when the toolchain recorded it
	Go       string `json:"go"`                 // Go toolchain, e.g. "go1.26.8"
	OS       string `json:"os"`                 // GOOS
	Arch     string `json:"arch"`               // GOARCH
}

// Read returns this binary's build information.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, commit, bi)
}

// resolve prefers the stamped values and falls back to the toolchain's.
func resolve(stampedVersion, stampedCommit string, bi *debug.BuildInfo) Info {
	in := Info{Version: stampedVersion, Commit: stampedCommit, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi != nil {
		if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if in.Commit == "" {
					in.Commit = s.Value
				}
			case "vcs.modified":
				in.Modified = s.Value == "true"
			case "vcs.time":
				in.Built = s.Value
			}
		}
		if bi.GoVersion != "" {
			in.Go = bi.GoVersion
		}
	}
	if in.Version == "" {
		in.Version = "dev"
	}
	return in
}

// Version is the version string alone, for --version and protocol
// handshakes (the MCP server's implementation version).
func Version() string { return Read().Version }

// String is the one-line form `version` prints: "v1.2.3 (commit 0123abcd,
// go1.26.8, linux/amd64)".
func (in Info) String() string {
	c := "unknown"
	if in.Commit != "" {
		c = in.Commit[:min(len(in.Commit), 12)]
		if in.Modified {
			c += "-dirty"
		}
	}
	return fmt.Sprintf("%s (commit %s, %s, %s/%s)", in.Version, c, in.Go, in.OS, in.Arch)
}
