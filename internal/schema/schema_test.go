package schema

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/schemas from the Go types")

const dir = "../../docs/schemas"

// TestSchemasAreCurrent checks that docs/schemas holds exactly the schemas
// generated from the Go types (go test ./internal/schema -update rewrites
// them; make schemas does the same).
func TestSchemasAreCurrent(t *testing.T) {
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]bool{}
	for _, o := range Outputs {
		data, err := Generate(o)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, o.Name+".json")
		want[o.Name+".json"] = true
		if *update {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run: make schemas)", err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("%s differs from the schema of %s; run: make schemas", path, o.Type)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !want[e.Name()] {
			t.Errorf("%s/%s is no output's schema", dir, e.Name())
		}
	}
}
