package proctree

import (
	"fmt"
	"strconv"
	"strings"
)

// Environ returns the names of the environment variables process pid was
// started with set to something (/proc/PID/environ; readable for the same
// user's processes). Values are not returned: callers only ask which are
// set; a variable set empty counts as unset.
func Environ(pid int) ([]string, error) {
	data, err := readProc("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil, fmt.Errorf("read environment of %d: %w", pid, err)
	}
	var names []string
	for _, kv := range strings.Split(string(data), "\x00") {
		if name, value, ok := strings.Cut(kv, "="); ok && name != "" && value != "" {
			names = append(names, name)
		}
	}
	return names, nil
}
