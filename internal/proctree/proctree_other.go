//go:build !linux && !darwin

package proctree

import "fmt"

// get: this system's process tree is not read; callers fall back to what
// the environment says (see package agentsession).
func get(pid int) (Proc, error) {
	return Proc{}, fmt.Errorf("read process %d: %w", pid, ErrUnsupported)
}

func boot() (string, error) { return "", fmt.Errorf("read boot id: %w", ErrUnsupported) }

// args: reading another process's arguments needs KERN_PROCARGS2, which
// nothing here relies on.
func args(pid int) ([]string, error) {
	return nil, fmt.Errorf("read command line of %d: %w", pid, ErrUnsupported)
}
