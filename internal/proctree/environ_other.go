//go:build !linux

package proctree

import "fmt"

// Environ returns the names of the environment variables process pid was
// started with set to something; not supported off Linux.
func Environ(pid int) ([]string, error) {
	return nil, fmt.Errorf("read environment of %d: %w", pid, ErrUnsupported)
}
