package history_test

import (
	"os"
	"path/filepath"

	"github.com/intercom-dev/intercom/internal/history"
)

func removeIndex(home string) error { return os.RemoveAll(filepath.Dir(history.Path(home))) }
