package paths

import "os"

// sunPathLen is the size of sun_path in struct sockaddr_un on macOS
// (sys/un.h: char sun_path[104]).
const sunPathLen = 104

// runtimeDirs are the user's runtime directories: $XDG_RUNTIME_DIR when a
// user set one. macOS has no /run/user; its per-user temp dir ($TMPDIR,
// /var/folders/…/T/) is private already and comes next.
func runtimeDirs() []string {
	return []string{os.Getenv("XDG_RUNTIME_DIR")}
}
