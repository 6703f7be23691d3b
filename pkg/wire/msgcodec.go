package wire

import (
	"encoding/json"

	"github.com/valyala/fastjson"
)

var messageParsers fastjson.ParserPool

// DecodeMessage decodes a pushed message (one JSON Message, as a holder
// receives it) into what json.Unmarshal gives for it (valid JSON: the same
// message or the same failure), without reflection for the messages a broker
// writes; anything else (attachments, a key it does not know, a value of
// another type) is left to encoding/json.
func DecodeMessage(data []byte) (Message, error) {
	if hasSurrogateEscape(data) {
		return decodeMessageStd(data)
	}
	p := messageParsers.Get()
	defer messageParsers.Put(p)
	v, err := p.ParseBytes(data)
	if err != nil {
		return decodeMessageStd(data)
	}
	var m Message
	if !decodeMessageFast(v, &m) {
		return decodeMessageStd(data)
	}
	return m, nil
}

func decodeMessageStd(data []byte) (Message, error) {
	var m Message
	err := json.Unmarshal(data, &m)
	return m, err
}

func decodeMessageFast(v *fastjson.Value, m *Message) bool {
	o, err := v.Object()
	if err != nil {
		return false
	}
	ok := true
	o.Visit(func(k []byte, v *fastjson.Value) {
		if !ok {
			return
		}
		if v.Type() == fastjson.TypeNull { // encoding/json leaves the field as it is
			ok = messageKey(string(k))
			return
		}
		switch string(k) {
		case "id":
			ok = readString(v, &m.ID)
		case "seq":
			m.Seq, err = v.Uint64()
			ok = err == nil
		case "from":
			ok = decodePeer(v, &m.From)
		case "to":
			ok = readString(v, &m.To)
		case "text":
			ok = readString(v, &m.Text)
		case "delivery":
			ok = readString(v, &m.Delivery)
		case "expects_reply":
			ok = readBool(v, &m.ExpectsReply)
		case "reply_to":
			ok = readString(v, &m.ReplyTo)
		case "thread":
			ok = readString(v, &m.Thread)
		case "queue_mode":
			ok = readString(v, &m.QueueMode)
		case "sent_at":
			ok = readTime(v, &m.SentAt)
		case "topic":
			ok = readString(v, &m.Topic)
		case "event":
			ok = readString(v, &m.Event)
		case "resource":
			ok = readString(v, &m.Resource)
		case "ownership":
			ok = readString(v, &m.Ownership)
		case "from_person":
			ok = readBool(v, &m.FromPerson)
		case "wake_held":
			ok = readString(v, &m.WakeHeld)
		default: // attachments, or a key in another case
			ok = false
		}
	})
	return ok
}

func decodePeer(v *fastjson.Value, p *Peer) bool {
	o, err := v.Object()
	if err != nil {
		return false
	}
	ok := true
	o.Visit(func(k []byte, v *fastjson.Value) {
		if !ok {
			return
		}
		if v.Type() == fastjson.TypeNull {
			ok = string(k) == "id" || string(k) == "name" || string(k) == "cwd"
			return
		}
		switch string(k) {
		case "id":
			ok = readString(v, &p.ID)
		case "name":
			ok = readString(v, &p.Name)
		case "cwd":
			ok = readString(v, &p.Cwd)
		default:
			ok = false
		}
	})
	return ok
}

func messageKey(k string) bool {
	switch k {
	case "id", "seq", "from", "to", "text", "delivery", "expects_reply", "reply_to", "thread", "queue_mode",
		"attachments", "sent_at", "topic", "event", "resource", "ownership", "from_person", "wake_held":
		return true
	}
	return false
}
