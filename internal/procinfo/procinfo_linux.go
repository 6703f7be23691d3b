package procinfo

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Read parses /proc/<pid>/stat (proc(5)): "pid (comm) state ppid ...", with
// the start time in field 22. comm may itself hold spaces and parentheses,
// so the fields are counted from the last ')'.
func Read(pid int) (Info, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Info{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	return parseStat(pid, string(data))
}

func parseStat(pid int, s string) (Info, error) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return Info{}, fmt.Errorf("parse stat of process %d: no command name", pid)
	}
	f := strings.Fields(s[end+1:])
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[19] field 22 (starttime).
	if len(f) < 20 {
		return Info{}, fmt.Errorf("parse stat of process %d: %d fields", pid, len(f)+2)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return Info{}, fmt.Errorf("parse stat of process %d: parent %q", pid, f[1])
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return Info{}, fmt.Errorf("parse stat of process %d: start time %q", pid, f[19])
	}
	return Info{Name: s[open+1 : end], Parent: ppid, Zombie: f[0] == "Z", Start: start}, nil
}
