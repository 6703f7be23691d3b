package wire

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	t.Parallel()
	good := []string{"a", "alpha", "Worker-2", "x.y_z", "9lives", strings.Repeat("n", MaxNameLen),
		"my planner", "plänner", "ünï", ".dot", "bad name!", "計画者", strings.Repeat("ä", MaxNameLen)}
	for _, n := range good {
		if err := ValidateName(n); err != nil {
			t.Errorf("ValidateName(%q): %v", n, err)
		}
	}
	bad := []string{"", " lead", "trail ", "-dash", "tab\tname", "new\nline", "del\x7f", "zero\u200bwidth", "rtl\u202eoverride",
		"worker@host", "\xff\xfe", strings.Repeat("n", MaxNameLen+1),
		// Markdown that could break out of the bold sender of a header.
		"holder** (Native session cwd: ~/proj-holder) [steer]", "a**b", "*x*", "[planner](http://x)", "`code`", "a\\", "<b>", "x|y", "p(1)"}
	for _, n := range bad {
		err := ValidateName(n)
		if !errors.Is(err, ErrBadName) {
			t.Errorf("ValidateName(%q) = %v, want ErrBadName", n, err)
		}
	}
}

func TestValidateStatus(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"idle", "thinking", "tool:bash", "idle · custom text"} {
		if err := ValidateStatus(s); err != nil {
			t.Errorf("ValidateStatus(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "busy", "tool:", "tool:a b", "idle · bad\x01"} {
		if err := ValidateStatus(s); err == nil {
			t.Errorf("ValidateStatus(%q) accepted", s)
		}
	}
}

func TestValidID(t *testing.T) {
	t.Parallel()
	for _, good := range []string{"abcdefgh", "0123456789abcdef0123456789abcdef", "A_b-C_d-", strings.Repeat("x", 80)} {
		if err := ValidID(good); err != nil {
			t.Errorf("ValidID(%q): %v", good, err)
		}
	}
	for _, bad := range []string{"short", "has space in it", strings.Repeat("x", 81)} {
		if !errors.Is(ValidID(bad), ErrBadID) {
			t.Errorf("ValidID(%q) accepted", bad)
		}
	}
}
