package wire

import (
	"encoding/json"
	"errors"

	"github.com/valyala/fastjson"
)

// SubjBoundary is a hook's one request at a turn boundary (a tool call, a
// prompt, the end of a turn): report the session's state and fetch what
// may be delivered now, in one round trip. (The acknowledgement of what
// the hook then hands over is a second request, sent only once its answer
// is written, and only when there was something to hand over.)
const SubjBoundary = SubjectPrefix + "boundary"

// ErrNoBoundary is a boundary request's error from a broker that predates
// it (no responder to SubjBoundary): the caller makes it as a state report
// and an inbox fetch instead.
var ErrNoBoundary = errors.New("the broker does not take boundary requests (an older broker)")

// BoundaryRequest reports Status (as StateRequest; "" reports nothing) of
// a held session and, with Fetch, fetches its deliverable messages (as
// InboxRequest, recorded as fetched).
type BoundaryRequest struct {
	SessionID string `json:"session_id"`
	Status    string `json:"status,omitempty"`
	Fetch     bool   `json:"fetch,omitempty"`
}

// AppendJSON appends r as json.Marshal writes it, without its reflection
// (a hook process writes one boundary request in its life).
func (r BoundaryRequest) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"session_id":`...)
	dst = appendString(dst, r.SessionID)
	if r.Status != "" {
		dst = append(dst, `,"status":`...)
		dst = appendString(dst, r.Status)
	}
	if r.Fetch {
		dst = append(dst, `,"fetch":true`...)
	}
	return append(dst, '}')
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

// DecodeBoundaryReply decodes a reply to a boundary request into what
// json.Unmarshal into Reply[BoundaryReply] gives for it. A reply that
// carries no messages (nothing waits: most of a hook's boundaries) is read
// without reflection: a hook process decodes one reply in its life, and a
// reflective decoder costs more to build than to run. Anything else is
// left to encoding/json.
func DecodeBoundaryReply(data []byte) (Reply[BoundaryReply], error) {
	if r, ok := decodeBoundaryFast(data); ok {
		return r, nil
	}
	var r Reply[BoundaryReply]
	err := json.Unmarshal(data, &r)
	return r, err
}

// decodeBoundaryFast decodes {"result":{"held":B[,"state_error":S]}} and
// reports false for any other shape.
func decodeBoundaryFast(data []byte) (Reply[BoundaryReply], bool) {
	if hasSurrogateEscape(data) {
		return Reply[BoundaryReply]{}, false
	}
	p := listParsers.Get()
	defer listParsers.Put(p)
	obj, ok := resultObject(p, data)
	if !ok {
		return Reply[BoundaryReply]{}, false
	}
	var out BoundaryReply
	obj.Visit(func(k []byte, v *fastjson.Value) {
		switch {
		case !ok:
		case string(k) == "held":
			ok = readBool(v, &out.Held)
		case string(k) == "state_error":
			ok = readString(v, &out.StateError)
		default:
			ok = false // messages, or a key of a newer broker
		}
	})
	if !ok {
		return Reply[BoundaryReply]{}, false
	}
	return Reply[BoundaryReply]{Result: &out}, true
}
