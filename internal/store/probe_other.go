//go:build !linux

package store

// openProbe opens a named probe file in dir (O_TMPFILE is Linux's).
func openProbe(dir string) (fd int, name string, err error) { return openNamedProbe(dir) }
