package agentsession

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"

	"github.com/intercom-dev/intercom/internal/atomicfile"
)

// loadProgress reads the part delivery in flight recorded at path (nil
// when there is none).
func loadProgress(path string) *Progress {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var p Progress
	if json.Unmarshal(data, &p) != nil || p.ID == "" {
		return nil
	}
	return &p
}

// saveProgress records p at path, or removes the record when p is nil.
func saveProgress(path string, p *Progress) error {
	if p == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	data, _ := json.Marshal(p)
	return atomicfile.WriteFile(path, data, 0o600)
}
