package wire

import "time"

// History: delivered messages and published topic records the broker keeps
// for a retention period after they were acknowledged (or published), read
// in pages by whoever indexes them (intercom search, intercom web).
const (
	SubjHistory      = SubjectPrefix + "history"
	SubjHistoryPurge = SubjectPrefix + "historypurge"
)

// History entry kinds.
const (
	HistoryMessage = "message" // a delivered (acknowledged) message
	HistoryRecord  = "record"  // a published topic record
)

// MaxHistoryPage is the most entries one HistoryRequest returns.
const MaxHistoryPage = 2000

// HistoryRequest reads the entries kept after cursor After ("" for the
// oldest), oldest first, at most Limit (MaxHistoryPage when 0 or more).
type HistoryRequest struct {
	After string `json:"after,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

// HistoryEntry is one kept message or record. Cursor orders entries by the
// time they were kept; it never repeats.
type HistoryEntry struct {
	Cursor  string       `json:"cursor"`
	Kind    string       `json:"kind"`
	At      time.Time    `json:"at"` // acknowledged (message) or published (record)
	Message *Message     `json:"message,omitempty"`
	Record  *TopicRecord `json:"record,omitempty"`
}

// HistoryReply answers HistoryRequest. Epoch changes whenever entries were
// removed other than by age or size (a purge, a forgotten session): an
// index built under another epoch must be rebuilt. First is the oldest
// cursor still kept: an index drops what is older.
type HistoryReply struct {
	Entries []HistoryEntry `json:"entries"`
	Epoch   string         `json:"epoch"`
	First   string         `json:"first,omitempty"`
	More    bool           `json:"more,omitempty"`
}

// HistoryPurgeRequest removes kept entries: those involving SessionID
// (sender or recipient) when set, else all of them; only those kept before
// Before when it is set.
type HistoryPurgeRequest struct {
	SessionID string    `json:"session_id,omitempty"`
	Before    time.Time `json:"before,omitzero"`
}

// HistoryPurgeReply answers HistoryPurgeRequest.
type HistoryPurgeReply struct {
	Removed int `json:"removed"`
}
