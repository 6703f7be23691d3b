package wire

import (
	"encoding/json"
	"strconv"
)

// DecodeMessage decodes a pushed message (one JSON Message, as a holder
// receives it) into what json.Unmarshal gives for it (valid JSON: the same
// message or the same failure), in one pass for the messages a broker
// writes (scanner); anything else (attachments, a key it does not know, a
// value of another type) is left to encoding/json.
func DecodeMessage(data []byte) (Message, error) {
	var m Message
	if s := (scanner{data: data}); scanMessage(&s, &m, &noMessage) && s.end() {
		return m, nil
	}
	var std Message // its own: m would move to the heap
	err := json.Unmarshal(data, &std)
	return std, err
}

// noMessage is the previous message of a push's first.
var noMessage Message

// scanMessage reads m; prev is the message before it in its push, whose
// sender, recipient and delivery m's likely share (strAs).
func scanMessage(s *scanner, m, prev *Message) bool {
	if !s.next('{') {
		return false
	}
	for n := 0; ; {
		k, more := s.key(&n)
		if !more {
			return !s.bad
		}
		if !messageField(s, k, m, prev) {
			return false
		}
	}
}

func scanPeer(s *scanner, p, prev *Peer) bool {
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
		if !peerField(s, k, p, prev) {
			return false
		}
	}
}

func messageField(s *scanner, k []byte, m, prev *Message) bool {
	switch string(k) {
	case "id":
		return s.str(&m.ID)
	case "seq":
		return s.uint(&m.Seq)
	case "from":
		return scanPeer(s, &m.From, &prev.From)
	case "to":
		return s.strAs(&m.To, prev.To)
	case "text":
		return s.str(&m.Text)
	case "delivery":
		return s.strAs(&m.Delivery, prev.Delivery)
	case "expects_reply":
		return s.boolean(&m.ExpectsReply)
	case "reply_to":
		return s.str(&m.ReplyTo)
	case "thread":
		return s.str(&m.Thread)
	case "queue_mode":
		return s.str(&m.QueueMode)
	case "sent_at":
		return s.moment(&m.SentAt)
	case "topic":
		return s.str(&m.Topic)
	case "event":
		return s.str(&m.Event)
	case "resource":
		return s.str(&m.Resource)
	case "ownership":
		return s.str(&m.Ownership)
	case "from_person":
		return s.boolean(&m.FromPerson)
	case "wake_held":
		return s.str(&m.WakeHeld)
	}
	return false // attachments, or a key in another case
}

func peerField(s *scanner, k []byte, p, prev *Peer) bool {
	switch string(k) {
	case "id":
		return s.strAs(&p.ID, prev.ID)
	case "name":
		return s.strAs(&p.Name, prev.Name)
	case "cwd":
		return s.strAs(&p.Cwd, prev.Cwd)
	}
	return false
}

// DecodePushed appends the messages of a push to into, in order: one
// Message, or several as a JSON array (a holder that registered with
// Batches). Each is read in one pass as DecodeMessage reads it; a push the
// scanner leaves to encoding/json is read by encoding/json. into's
// messages are reused (a holder decodes every push into one buffer).
func DecodePushed(data []byte, into []Message) ([]Message, error) {
	s := scanner{data: data}
	if !s.next('[') {
		m, err := DecodeMessage(data)
		if err != nil {
			return into, err
		}
		return append(into, m), nil
	}
	if out, ok := scanBatch(&s, into); ok {
		return out, nil
	}
	var std []Message
	if err := json.Unmarshal(data, &std); err != nil {
		return into, err
	}
	return append(into, std...), nil
}

// scanBatch reads the messages of an array, its '[' read, appending them to
// into; false when one is not for the scanner.
func scanBatch(s *scanner, into []Message) ([]Message, bool) {
	start := len(into)
	if s.next(']') {
		return into, s.end()
	}
	for {
		if len(into) < cap(into) {
			into = into[:len(into)+1]
			into[len(into)-1] = Message{}
		} else {
			into = append(into, Message{})
		}
		prev := &noMessage
		if n := len(into); n-1 > start {
			prev = &into[n-2]
		}
		if !scanMessage(s, &into[len(into)-1], prev) {
			return into[:start], false
		}
		if s.next(']') {
			return into, s.end()
		}
		if !s.next(',') {
			return into[:start], false
		}
	}
}

// AppendMessage appends m as JSON, byte for byte as json.Marshal writes it
// (the same fields, order and omissions), without reflection: the broker
// writes a message at every send, into the store and to its holder.
func AppendMessage(dst []byte, m *Message) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, m.ID)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendUint(dst, m.Seq, 10)
	dst = append(dst, `,"from":`...)
	dst = AppendPeer(dst, &m.From)
	dst = append(dst, `,"to":`...)
	dst = appendString(dst, m.To)
	dst = append(dst, `,"text":`...)
	dst = appendString(dst, m.Text)
	dst = append(dst, `,"delivery":`...)
	dst = appendString(dst, m.Delivery)
	dst = append(dst, `,"expects_reply":`...)
	dst = strconv.AppendBool(dst, m.ExpectsReply)
	dst = appendOptString(dst, "reply_to", m.ReplyTo)
	dst = appendOptString(dst, "thread", m.Thread)
	dst = appendOptString(dst, "queue_mode", m.QueueMode)
	if len(m.Attachments) > 0 {
		dst = append(dst, `,"attachments":[`...)
		for i := range m.Attachments {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendAttachment(dst, &m.Attachments[i])
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"sent_at":`...)
	dst = appendTime(dst, m.SentAt)
	dst = appendOptString(dst, "topic", m.Topic)
	dst = appendOptString(dst, "event", m.Event)
	dst = appendOptString(dst, "resource", m.Resource)
	dst = appendOptString(dst, "ownership", m.Ownership)
	dst = appendOptTrue(dst, "from_person", m.FromPerson)
	dst = appendOptString(dst, "wake_held", m.WakeHeld)
	return append(dst, '}')
}

// AppendMessages appends msgs as a JSON array of AppendMessage's objects
// (a batched push), as json.Marshal writes the slice.
func AppendMessages(dst []byte, msgs []*Message) []byte {
	dst = append(dst, '[')
	for i, m := range msgs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendMessage(dst, m)
	}
	return append(dst, ']')
}

// AppendPeer appends p as JSON, as json.Marshal writes it.
func AppendPeer(dst []byte, p *Peer) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, p.ID)
	dst = append(dst, `,"name":`...)
	dst = appendString(dst, p.Name)
	if p.Cwd != "" {
		dst = append(dst, `,"cwd":`...)
		dst = appendString(dst, p.Cwd)
	}
	return append(dst, '}')
}

func appendAttachment(dst []byte, a *Attachment) []byte {
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, a.Type)
	dst = append(dst, `,"name":`...)
	dst = appendString(dst, a.Name)
	if a.Language != "" {
		dst = append(dst, `,"language":`...)
		dst = appendString(dst, a.Language)
	}
	if a.Path != "" {
		dst = append(dst, `,"path":`...)
		dst = appendString(dst, a.Path)
	}
	dst = append(dst, `,"content":`...)
	dst = appendString(dst, a.Content)
	return append(dst, '}')
}

// appendOptString appends ,"key":v unless v is empty (a field tagged
// omitempty, after at least one field).
func appendOptString(dst []byte, key, v string) []byte {
	if v == "" {
		return dst
	}
	dst = append(dst, ',', '"')
	dst = append(dst, key...)
	dst = append(dst, '"', ':')
	return appendString(dst, v)
}

// appendOptTrue appends ,"key":true if v (a bool tagged omitempty, after at
// least one field).
func appendOptTrue(dst []byte, key string, v bool) []byte {
	if !v {
		return dst
	}
	dst = append(dst, ',', '"')
	dst = append(dst, key...)
	return append(dst, `":true`...)
}
