package history

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// snippetWords is about how many words a snippet shows.
const snippetWords = 24

// term is one word of a query; prefix matches words that begin with it.
type term struct {
	word   string
	prefix bool
}

// queryTerms are the words of a query as matchExpr reads them, folded.
func queryTerms(query string) []term {
	var out []term
	for _, w := range strings.Fields(query) {
		prefix := strings.HasSuffix(w, "*")
		parts := strings.FieldsFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		for i, p := range parts {
			out = append(out, term{word: strings.ToLower(p), prefix: prefix && i == len(parts)-1})
		}
	}
	return out
}

func (t term) matches(word string) bool {
	w := strings.ToLower(word)
	if t.prefix {
		return strings.HasPrefix(w, t.word)
	}
	return w == t.word
}

// Snippet returns about words words of text around its first word that a
// term matches, every matching word between MarkStart and MarkEnd, with …
// where text was cut. Without a match it is the start of text.
func Snippet(text string, terms []term, words int) string {
	type span struct{ start, end int }
	var spans []span
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			i += n
			continue
		}
		j := i
		for j < len(text) {
			r, n := utf8.DecodeRuneInString(text[j:])
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				break
			}
			j += n
		}
		spans = append(spans, span{i, j})
		i = j
	}
	hit := func(s span) bool {
		for _, t := range terms {
			if t.matches(text[s.start:s.end]) {
				return true
			}
		}
		return false
	}
	first := -1
	for k, s := range spans {
		if hit(s) {
			first = k
			break
		}
	}
	if len(spans) == 0 {
		return text
	}
	from := max(0, first-words/3)
	to := min(len(spans), from+words)
	start, end := spans[from].start, spans[to-1].end
	if from == 0 {
		start = 0
	}
	if to == len(spans) {
		end = len(text)
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	at := start
	for _, s := range spans[from:to] {
		if hit(s) {
			b.WriteString(text[at:s.start])
			b.WriteString(MarkStart + text[s.start:s.end] + MarkEnd)
			at = s.end
		}
	}
	b.WriteString(text[at:end])
	if end < len(text) {
		b.WriteString("…")
	}
	return b.String()
}
