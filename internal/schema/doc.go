package schema

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Markers of the generated part of docs/json.md.
const (
	DocBegin = "<!-- BEGIN GENERATED: go test ./internal/schema -update -->"
	DocEnd   = "<!-- END GENERATED -->"
)

// Reference renders the field reference of every output, from the same
// schemas as docs/schemas: one table per output, one row per field (nested
// fields dotted, array items with []), "always" for required fields.
func Reference() (string, error) {
	var b strings.Builder
	for _, o := range Outputs {
		s, err := jsonschema.ForType(o.Type, &jsonschema.ForOptions{})
		if err != nil {
			return "", err
		}
		strictArrays(s)
		fmt.Fprintf(&b, "### %s\n\n%s — schema [`%s.json`](schemas/%s.json)\n\n| field | type | present |\n|---|---|---|\n", o.Name, o.Command, o.Name, o.Name)
		fields(&b, "", s)
		b.WriteString("\n")
	}
	return b.String(), nil
}

func fields(b *strings.Builder, prefix string, s *jsonschema.Schema) {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	order := s.PropertyOrder
	sort.SliceStable(names, func(i, j int) bool {
		return indexOr(order, names[i]) < indexOr(order, names[j])
	})
	for _, n := range names {
		p := s.Properties[n]
		present := "optional"
		if slices.Contains(s.Required, n) {
			present = "always"
		}
		fmt.Fprintf(b, "| `%s%s` | %s | %s |\n", prefix, n, typeOf(p), present)
		switch {
		case len(p.Properties) > 0:
			fields(b, prefix+n+".", p)
		case p.Items != nil && len(p.Items.Properties) > 0:
			fields(b, prefix+n+"[].", p.Items)
		}
	}
}

func indexOr(order []string, n string) int {
	if i := slices.Index(order, n); i >= 0 {
		return i
	}
	return len(order)
}

func typeOf(s *jsonschema.Schema) string {
	t := s.Type
	if len(s.Types) > 0 {
		t = strings.Join(s.Types, " or ")
	}
	if t == "" {
		t = "any"
	}
	if s.Items != nil {
		t += " of " + typeOf(s.Items)
	}
	return t
}
