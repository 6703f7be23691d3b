package pidfile

import (
	"fmt"
	"os"
	"strings"

	"github.com/intercom-dev/intercom/internal/procinfo"
)

// Self returns the identity of pid as seen from this process: this boot's
// id, this process's pid namespace and the start time of pid.
func Self(pid int) (*Identity, error) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return nil, fmt.Errorf("read boot id: %w", err)
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return nil, fmt.Errorf("read pid namespace: %w", err)
	}
	in, err := procinfo.Read(pid)
	if err != nil {
		return nil, err
	}
	return &Identity{Scheme: schemeLinux, Boot: strings.TrimSpace(string(boot)), PidNS: nsID(ns), Start: in.Start}, nil
}

func nsID(link string) string {
	// "pid:[4026531836]" -> "4026531836"
	link = strings.TrimPrefix(link, "pid:")
	return strings.Trim(link, "[]")
}
