package schema

import "github.com/intercom-dev/intercom/internal/history"

// HistoryList is history --json: entries oldest first.
type HistoryList struct {
	Items []history.Item `json:"items"`
}

// SearchResults is search --json: entries best first, each with its
// matching part (snippet, matches between \u0002 and \u0003).
type SearchResults struct {
	Query string         `json:"query"`
	Items []history.Item `json:"items"`
}

// WebStarted is web --json's first line: the URL to open (with its token)
// and the person's session.
type WebStarted struct {
	URL     string `json:"url"`
	Session string `json:"session"`
}
