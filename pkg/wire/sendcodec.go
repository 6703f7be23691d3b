package wire

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/valyala/fastjson"
)

// The send request and its reply are the messages a pipelined sender pays
// for per message, and reflection was most of their cost (issue 32). The
// client writes the request with AppendSendRequest and reads the reply with
// DecodeSendReply; the broker writes the reply with AppendSendReply. All
// three are plain JSON: encoding/json reads and writes the same values.

// AppendSendRequest appends r as JSON, the fields json.Marshal writes (the
// attachments by json.Marshal itself): json.Unmarshal reads back an equal
// request.
func AppendSendRequest(dst []byte, r *SendRequest) []byte {
	dst = append(dst, `{"from":`...)
	dst = appendString(dst, r.From)
	dst = append(dst, `,"to":`...)
	dst = appendString(dst, r.To)
	dst = append(dst, `,"text":`...)
	dst = appendString(dst, r.Text)
	dst = appendOptString(dst, "delivery", r.Delivery)
	dst = appendOptTrue(dst, "delivery_set", r.DeliverySet)
	dst = appendOptTrue(dst, "expects_reply", r.ExpectsReply)
	dst = appendOptString(dst, "reply_to", r.ReplyTo)
	dst = appendOptString(dst, "thread", r.Thread)
	dst = appendOptString(dst, "queue_mode", r.QueueMode)
	if len(r.Attachments) > 0 {
		b, _ := json.Marshal(r.Attachments) // plain strings: cannot fail
		dst = append(dst, `,"attachments":`...)
		dst = append(dst, b...)
	}
	dst = appendOptString(dst, "client_msg_id", r.ClientMsgID)
	dst = appendOptString(dst, "wait_subject", r.WaitSubject)
	if r.TimeoutMs != 0 {
		dst = append(dst, `,"timeout_ms":`...)
		dst = strconv.AppendInt(dst, r.TimeoutMs, 10)
	}
	dst = appendOptTrue(dst, "lean", r.Lean)
	dst = appendOptTrue(dst, "batch_reply", r.BatchReply)
	return append(dst, '}')
}

// LeanRecipient is the recipient row of a lean send reply
// (SendRequest.Lean): its id and name, nothing else.
func LeanRecipient(s Session) Session { return Session{ID: s.ID, Name: s.Name} }

// AppendSendReply appends the envelope {"result": r} as JSON, the
// recipient's row without its zero fields (AppendSession): json.Unmarshal
// into Reply[SendReply] reads back an equal reply.
func AppendSendReply(dst []byte, r *SendReply) []byte {
	dst = append(dst, `{"result":{"id":`...)
	dst = appendString(dst, r.ID)
	dst = append(dst, `,"to":`...)
	dst = AppendSession(dst, &r.To)
	flag := func(k string, v bool) {
		dst = append(dst, ',', '"')
		dst = append(dst, k...)
		dst = append(dst, '"', ':')
		dst = strconv.AppendBool(dst, v)
	}
	flag("offline", r.Offline)
	flag("duplicate", r.Duplicate)
	flag("peer_busy", r.PeerBusy)
	flag("queued", r.Queued)
	flag("remote_stored", r.RemoteStored)
	if r.Held {
		dst = append(dst, `,"held":true`...)
	}
	if r.WakeHeld != "" {
		dst = append(dst, `,"wake_held":`...)
		dst = appendString(dst, r.WakeHeld)
	}
	return append(dst, "}}"...)
}

var sendParsers fastjson.ParserPool

// DecodeSendReply decodes a reply to a send into what json.Unmarshal into
// Reply[SendReply] gives for it (valid JSON: the same reply or the same
// failure), without reflection for the replies a broker writes (a lean one
// or a whole row); anything else (an error reply, a key it does not know, a
// value of another type) is left to encoding/json.
func DecodeSendReply(data []byte) (Reply[SendReply], error) {
	if r, ok := decodeSendLean(data); ok {
		return r, nil
	}
	if r, ok := decodeSendFast(data); ok {
		return r, nil
	}
	var r Reply[SendReply]
	err := json.Unmarshal(data, &r)
	return r, err
}

// decodeSendLean reads a reply whose recipient row holds at most its id and
// name (a lean reply) in one pass (scanner); false for any other.
func decodeSendLean(data []byte) (Reply[SendReply], bool) {
	r := &SendReply{}
	s := scanner{data: data}
	if !s.next('{') {
		return Reply[SendReply]{}, false
	}
	k, more := s.key(new(int))
	if !more || string(k) != "result" || !scanLeanReply(&s, r) || !s.next('}') || !s.end() {
		return Reply[SendReply]{}, false
	}
	return Reply[SendReply]{Result: r}, true
}

func scanLeanReply(s *scanner, r *SendReply) bool {
	if !s.next('{') {
		return false
	}
	for n := 0; ; {
		k, more := s.key(&n)
		if !more {
			return !s.bad
		}
		var ok bool
		switch string(k) {
		case "id":
			ok = s.str(&r.ID)
		case "to":
			ok = scanLeanRecipient(s, &r.To)
		case "offline":
			ok = s.boolean(&r.Offline)
		case "duplicate":
			ok = s.boolean(&r.Duplicate)
		case "peer_busy":
			ok = s.boolean(&r.PeerBusy)
		case "queued":
			ok = s.boolean(&r.Queued)
		case "remote_stored":
			ok = s.boolean(&r.RemoteStored)
		case "held":
			ok = s.boolean(&r.Held)
		case "wake_held":
			ok = s.str(&r.WakeHeld)
		}
		if !ok {
			return false
		}
	}
}

// scanLeanRecipient reads a row of an id and a name; false for a whole one.
func scanLeanRecipient(s *scanner, to *Session) bool {
	if s.null() {
		return true
	}
	if !s.next('{') {
		return false
	}
	for n := 0; ; {
		k, more := s.key(&n)
		if !more {
			return !s.bad
		}
		var ok bool
		switch string(k) {
		case "id":
			ok = s.str(&to.ID)
		case "name":
			ok = s.str(&to.Name)
		}
		if !ok {
			return false
		}
	}
}

func decodeSendFast(data []byte) (Reply[SendReply], bool) {
	if hasSurrogateEscape(data) {
		return Reply[SendReply]{}, false
	}
	p := sendParsers.Get()
	defer sendParsers.Put(p)
	obj, ok := resultObject(p, data)
	if !ok {
		return Reply[SendReply]{}, false
	}
	var r SendReply
	obj.Visit(func(k []byte, v *fastjson.Value) {
		if !ok {
			return
		}
		if v.Type() == fastjson.TypeNull { // encoding/json leaves the field as it is
			ok = sendReplyKey(string(k))
			return
		}
		switch string(k) {
		case "id":
			ok = readString(v, &r.ID)
		case "to":
			ok = decodeSession(v, &r.To, nil)
		case "offline":
			ok = readBool(v, &r.Offline)
		case "duplicate":
			ok = readBool(v, &r.Duplicate)
		case "peer_busy":
			ok = readBool(v, &r.PeerBusy)
		case "queued":
			ok = readBool(v, &r.Queued)
		case "remote_stored":
			ok = readBool(v, &r.RemoteStored)
		case "held":
			ok = readBool(v, &r.Held)
		case "wake_held":
			ok = readString(v, &r.WakeHeld)
		default:
			ok = false
		}
	})
	if !ok {
		return Reply[SendReply]{}, false
	}
	return Reply[SendReply]{Result: &r}, true
}

func sendReplyKey(k string) bool {
	switch k {
	case "id", "to", "offline", "duplicate", "peer_busy", "queued", "remote_stored", "held", "wake_held":
		return true
	}
	return false
}

// ReplyBatchToken is the last token of the subject of batched send replies
// (SendRequest.BatchReply): never a reply token of a client's, which are
// letters and digits.
const ReplyBatchToken = "_"

// AppendBatchedReply appends one line of a batch of send replies: the last
// token of the reply's own subject, a space, the reply (JSON, which holds
// no raw newline), a newline.
func AppendBatchedReply(dst []byte, token string, reply []byte) []byte {
	dst = append(dst, token...)
	dst = append(dst, ' ')
	dst = append(dst, reply...)
	return append(dst, '\n')
}

// NextBatchedReply splits the first line off a batch of send replies: its
// token and reply, and the rest; ok is false at the end or at a line that
// is not a token and a reply.
func NextBatchedReply(batch []byte) (token string, reply, rest []byte, ok bool) {
	line, rest, _ := bytes.Cut(batch, []byte{'\n'})
	tok, reply, found := bytes.Cut(line, []byte{' '})
	if !found || len(tok) == 0 {
		return "", nil, nil, false
	}
	return string(tok), reply, rest, true
}
