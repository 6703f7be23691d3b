package paths

import (
	"os"
	"strconv"
)

// sunPathLen is the size of sun_path in struct sockaddr_un on Linux (unix(7)).
const sunPathLen = 108

// runtimeDirs are the user's runtime directories: $XDG_RUNTIME_DIR, and the
// one systemd-logind creates, /run/user/<uid>, so that a process started
// without the variable (cron, a service) finds the same socket.
func runtimeDirs() []string {
	return []string{os.Getenv("XDG_RUNTIME_DIR"), "/run/user/" + strconv.Itoa(os.Getuid())}
}
