package wire

// SubjBoundary is a hook's one request at a turn boundary (a tool call, a
// prompt, the end of a turn): report the session's state and fetch what
// may be delivered now, in one round trip. (The acknowledgement of what
// the hook then hands over is a second request, sent only once its answer
// is written, and only when there was something to hand over.)
const SubjBoundary = SubjectPrefix + "boundary"

// BoundaryRequest reports Status (as StateRequest; "" reports nothing) of
// a held session and, with Fetch, fetches its deliverable messages (as
// InboxRequest, recorded as fetched).
type BoundaryRequest struct {
	SessionID string `json:"session_id"`
	Status    string `json:"status,omitempty"`
	Fetch     bool   `json:"fetch,omitempty"`
}

// BoundaryReply answers BoundaryRequest. Held is false when the session
// is unknown or not connected (no holder): then nothing was done, and the
// caller starts its holder and asks again. StateError is why Status was
// not taken (the fetch is done anyway: a report costs only itself).
type BoundaryReply struct {
	Held       bool      `json:"held"`
	StateError string    `json:"state_error,omitempty"`
	Messages   []Message `json:"messages,omitempty"`
}
