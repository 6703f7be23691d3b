package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/intercom-dev/intercom/internal/atomicfile"
	"github.com/intercom-dev/intercom/internal/bounded"
	"github.com/intercom-dev/intercom/internal/flock"
)

// writeJSON writes v to path atomically and durably, mode 0600.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data, 0o600)
}

// createJSON writes v to path only if path does not exist yet, atomically
// and durably. It returns fs.ErrExist when another writer was first.
func createJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.CreateFile(path, data, 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fs.ErrExist
		}
		return err
	}
	return nil
}

// maxRecord is the largest run, question or answer file read.
const maxRecord = 16 << 20

func readJSON(path string, v any) error {
	data, err := bounded.ReadFile(path, path, maxRecord)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// withLock runs fn holding an exclusive flock on path.
func withLock(path string, fn func() error) error {
	f, err := flock.Lock(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return fn()
}

// loadEach loads every directory in dir with load, by name, passing over
// those that do not load (being written, or not a record); a missing dir
// holds none.
func loadEach[T any](dir string, load func(name string) (T, error)) ([]T, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []T
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if v, err := load(e.Name()); err == nil {
			out = append(out, v)
		}
	}
	return out, nil
}
