package reservations

import "testing"

func TestOverlap(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"a.go", "a.go", true},
		{"a.go", "b.go", false},
		{"internal/store", "internal/store/keys.go", true},
		{"internal/store/keys.go", "internal/store", true},
		{"internal/store", "internal/storex/keys.go", false},
		{"*.go", "main.go", true},
		{"*.go", "cmd/main.go", false},
		{"**/*.go", "cmd/x/main.go", true},
		{"docs/**", "docs/a/b.md", true},
		{"docs/**", "doc/a.md", false},
		{"internal/*", "internal/store/keys.go", true},
		{"*.go", "*.md", true}, // two globs: taken to overlap
		{"cmd/*.go", "docs/*.md", false},
		{".", "anything", true},
	}
	for _, c := range cases {
		if got := Overlap(c.a, c.b); got != c.want {
			t.Errorf("Overlap(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := Overlap(c.b, c.a); got != c.want {
			t.Errorf("Overlap(%q, %q) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}
