//go:build !unix

package plainfile

import "os"

// Open is os.OpenFile (no poller to keep files off here).
func Open(path string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag, perm)
}

// ReadFile is os.ReadFile.
func ReadFile(path string) ([]byte, error) { return os.ReadFile(path) }
