package history

import "testing"

func TestSnippetMarksEveryMatchAndCuts(t *testing.T) {
	m := func(s string) string { return MarkStart + s + MarkEnd }
	cases := []struct {
		text, query string
		words       int
		want        string
	}{
		{"Deploy the Frobnicator tonight", "frobnicator", 24, "Deploy the " + m("Frobnicator") + " tonight"},
		{"migrate, then migration two", "migrat*", 24, m("migrate") + ", then " + m("migration") + " two"},
		{"one two three four five six seven eight nine", "seven", 3, "…six " + m("seven") + " eight…"},
		{"nothing here", "absent", 24, "nothing here"},
		{"", "x", 24, ""},
	}
	for _, c := range cases {
		if got := Snippet(c.text, queryTerms(c.query), c.words); got != c.want {
			t.Errorf("Snippet(%q, %q) = %q, want %q", c.text, c.query, got, c.want)
		}
	}
}

func TestMatchExprQuotesWords(t *testing.T) {
	for q, want := range map[string]string{
		`deploy tonight`:     `"deploy" "tonight"`,
		`migrat*`:            `"migrat"*`,
		`"; DROP TABLE x --`: `"DROP" "TABLE" "x"`,
		`foo-bar`:            `"foo" "bar"`,
		`***`:                ``,
	} {
		if got := matchExpr(q); got != want {
			t.Errorf("matchExpr(%q) = %q, want %q", q, got, want)
		}
	}
}
