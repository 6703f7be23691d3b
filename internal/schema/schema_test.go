package schema

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jsonv "github.com/santhosh-tekuri/jsonschema/v6"
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

const doc = "../../docs/json.md"

// TestJSONDocIsCurrent checks that docs/json.md's reference is the one
// generated from the schemas, that every output is documented there, and
// that every JSON example validates against the schema named before it.
func TestJSONDocIsCurrent(t *testing.T) {
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	ref, err := Reference()
	if err != nil {
		t.Fatal(err)
	}
	generated := DocBegin + "\n\n" + ref + DocEnd + "\n"
	head, _, found := strings.Cut(text, DocBegin)
	if *update {
		if err := os.WriteFile(doc, []byte(head+generated), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !found || !strings.HasSuffix(text, generated) {
		t.Fatalf("%s: the generated reference is missing or out of date; run: make schemas", doc)
	}
	for _, o := range Outputs {
		if !strings.Contains(text, "(schemas/"+o.Name+".json)") {
			t.Errorf("%s does not link schemas/%s.json", doc, o.Name)
		}
	}
	c := jsonv.NewCompiler()
	for _, o := range Outputs {
		s, err := Generate(o)
		if err != nil {
			t.Fatal(err)
		}
		d, err := jsonv.UnmarshalJSON(bytes.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource(o.Name+".json", d); err != nil {
			t.Fatal(err)
		}
	}
	// Each ```json block is checked against the schema linked after it.
	blocks := strings.Split(head, "```json\n")
	for i, b := range blocks[1:] {
		example, rest, _ := strings.Cut(b, "```")
		_, after, ok := strings.Cut(rest, "(schemas/")
		name, _, _ := strings.Cut(after, ")")
		if !ok {
			t.Errorf("example %d has no schema link after it", i+1)
			continue
		}
		sch, err := c.Compile(strings.TrimPrefix(name, ""))
		if err != nil {
			t.Fatalf("compile %s: %v", name, err)
		}
		inst, err := jsonv.UnmarshalJSON(strings.NewReader(example))
		if err != nil {
			t.Errorf("example %d is not JSON: %v", i+1, err)
			continue
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("example %d does not match %s: %v", i+1, name, err)
		}
	}
}
