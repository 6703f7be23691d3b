package wire

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/intercom-dev/intercom/internal/jsonappend"
	"github.com/intercom-dev/intercom/internal/jsonfields"
	"github.com/valyala/fastjson"
)

// The list reply is the one large reply (a row per session: 1,000 sessions
// are ~230 KiB), and encoding/json by reflection was most of its cost on
// both sides. The broker writes each row with AppendSession (and keeps the
// bytes of rows that did not change); clients read the reply with
// DecodeListReply. Both are plain JSON: json.Unmarshal into
// Reply[ListReply] reads the same values.

// AppendSession appends s to dst as a JSON object, leaving out every field
// at its zero value: json.Unmarshal reads it back into an equal Session.
func AppendSession(dst []byte, s *Session) []byte {
	dst = append(dst, '{')
	first := true
	key := func(k string) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, k...)
		dst = append(dst, '"', ':')
	}
	str := func(k, v string) {
		if v != "" {
			key(k)
			dst = appendString(dst, v)
		}
	}
	boolean := func(k string, v bool) {
		if v {
			key(k)
			dst = append(dst, "true"...)
		}
	}
	integer := func(k string, v int) {
		if v != 0 {
			key(k)
			dst = strconv.AppendInt(dst, int64(v), 10)
		}
	}
	moment := func(k string, t time.Time) {
		if !t.IsZero() {
			key(k)
			dst = appendTime(dst, t)
		}
	}
	str("id", s.ID)
	str("name", s.Name)
	str("target", s.Target)
	str("cwd", s.Cwd)
	str("project", s.Project)
	str("model", s.Model)
	str("status", s.Status)
	str("state", s.State)
	boolean("accepts_asks", s.AcceptsAsks)
	integer("pending_asks", s.PendingAsks)
	if s.LastIntercomActivity != nil {
		key("last_intercom_activity")
		dst = appendTime(dst, *s.LastIntercomActivity)
	}
	moment("last_seen", s.LastSeen)
	boolean("connected", s.Connected)
	boolean("ephemeral", s.Ephemeral)
	boolean("self", s.Self)
	integer("queued", s.Queued)
	str("host", s.Host)
	moment("stuck_since", s.StuckSince)
	integer("stuck_seconds", s.StuckSeconds)
	str("stuck_reason", s.StuckReason)
	boolean("person", s.Person)
	str("wake_paused", s.WakePaused)
	return append(dst, '}')
}

// appendString appends v as a JSON string, as encoding/json writes it.
func appendString(dst []byte, v string) []byte { return jsonappend.String(dst, v) }

// appendTime appends t as time.Time's MarshalJSON does (the zero time for
// a year outside 0–9999: not a time the broker keeps).
func appendTime(dst []byte, t time.Time) []byte { return jsonappend.Time(dst, t) }

var listParsers fastjson.ParserPool

// DecodeListReply decodes a reply to a list request into what json.Unmarshal
// into Reply[ListReply] gives for it (valid JSON: the same reply or the same
// failure), several times faster for the replies a broker writes; anything
// else (an error reply, a key it does not know, a value of another type,
// text that is not UTF-8) is left to encoding/json. Of invalid JSON it may
// read more than encoding/json does (a number with a leading zero).
func DecodeListReply(data []byte) (Reply[ListReply], error) {
	if r, ok := decodeListFast(data); ok {
		return r, nil
	}
	var r Reply[ListReply]
	err := json.Unmarshal(data, &r)
	return r, err
}

// decodeListFast decodes {"result":{"sessions":[rows]}} and reports false
// for any other shape.
func decodeListFast(data []byte) (Reply[ListReply], bool) {
	if hasSurrogateEscape(data) { // fastjson reads a lone one differently
		return Reply[ListReply]{}, false
	}
	p := listParsers.Get()
	defer listParsers.Put(p)
	resObj, ok := resultObject(p, data)
	if !ok {
		return Reply[ListReply]{}, false
	}
	rows := resObj.Get("sessions")
	if resObj.Len() != 1 || rows == nil || rows.Type() != fastjson.TypeArray {
		return Reply[ListReply]{}, false
	}
	arr, _ := rows.Array()
	out := make([]Session, len(arr))
	shared := map[string]string{} // values many rows repeat: one string each
	for i, row := range arr {
		if !decodeSession(row, &out[i], shared) {
			return Reply[ListReply]{}, false
		}
	}
	return Reply[ListReply]{Result: &ListReply{Sessions: out}}, true
}

// resultObject parses data with p and returns the object of a reply
// envelope that holds nothing but "result"; false for any other shape.
func resultObject(p *fastjson.Parser, data []byte) (*fastjson.Object, bool) {
	v, err := p.ParseBytes(data)
	if err != nil {
		return nil, false
	}
	env, err := v.Object()
	if err != nil || env.Len() != 1 {
		return nil, false
	}
	res := env.Get("result")
	if res == nil || res.Type() != fastjson.TypeObject {
		return nil, false
	}
	obj, _ := res.Object()
	return obj, true
}

// decodeSession reads one row; false for anything but an object of known
// keys with values of their types.
func decodeSession(v *fastjson.Value, s *Session, shared map[string]string) bool {
	o, err := v.Object()
	if err != nil {
		return false
	}
	ok := true
	o.Visit(func(k []byte, v *fastjson.Value) {
		if !ok {
			return
		}
		if v.Type() == fastjson.TypeNull { // encoding/json: null leaves a field as it is
			if string(k) == "last_intercom_activity" {
				s.LastIntercomActivity = nil
			}
			ok = knownKey(string(k))
			return
		}
		switch string(k) {
		case "id":
			ok = readString(v, &s.ID)
		case "name":
			ok = readString(v, &s.Name)
		case "target":
			ok = readString(v, &s.Target)
		case "cwd":
			ok = readShared(v, &s.Cwd, shared)
		case "project":
			ok = readShared(v, &s.Project, shared)
		case "model":
			ok = readShared(v, &s.Model, shared)
		case "status":
			ok = readShared(v, &s.Status, shared)
		case "state":
			ok = readShared(v, &s.State, shared)
		case "host":
			ok = readShared(v, &s.Host, shared)
		case "wake_paused":
			ok = readString(v, &s.WakePaused)
		case "accepts_asks":
			ok = readBool(v, &s.AcceptsAsks)
		case "connected":
			ok = readBool(v, &s.Connected)
		case "ephemeral":
			ok = readBool(v, &s.Ephemeral)
		case "self":
			ok = readBool(v, &s.Self)
		case "person":
			ok = readBool(v, &s.Person)
		case "pending_asks":
			ok = readInt(v, &s.PendingAsks)
		case "queued":
			ok = readInt(v, &s.Queued)
		case "last_seen":
			ok = readTime(v, &s.LastSeen)
		case "stuck_since":
			ok = readTime(v, &s.StuckSince)
		case "stuck_seconds":
			ok = readInt(v, &s.StuckSeconds)
		case "stuck_reason":
			ok = readShared(v, &s.StuckReason, shared)
		case "last_intercom_activity":
			var t time.Time
			if ok = readTime(v, &t); ok {
				s.LastIntercomActivity = &t
			}
		default:
			ok = false // maybe a key in another case, which encoding/json matches
		}
	})
	return ok
}

// hasSurrogateEscape reports whether data holds an escaped UTF-16
// surrogate (\uD800–\uDFFF), which encoding/json never writes.
func hasSurrogateEscape(data []byte) bool { return jsonfields.HasSurrogateEscape(data) }

func knownKey(k string) bool {
	switch k {
	case "id", "name", "target", "cwd", "project", "model", "status", "state", "host", "wake_paused",
		"accepts_asks", "connected", "ephemeral", "self", "pending_asks", "queued", "last_seen", "last_intercom_activity",
		"stuck_since", "stuck_seconds", "stuck_reason":
		return true
	}
	return false
}

// stringBytes returns the text of a string value, false for another type
// or text that is not UTF-8 (which encoding/json would replace).
func stringBytes(v *fastjson.Value) ([]byte, bool) {
	b, err := v.StringBytes()
	return b, err == nil && utf8.Valid(b)
}

func readString(v *fastjson.Value, dst *string) bool {
	b, ok := stringBytes(v)
	if ok {
		*dst = string(b)
	}
	return ok
}

// readShared reads a string that other rows likely hold too.
func readShared(v *fastjson.Value, dst *string, shared map[string]string) bool {
	b, ok := stringBytes(v)
	if !ok {
		return false
	}
	if shared == nil {
		*dst = string(b)
		return true
	}
	if str, ok := shared[string(b)]; ok {
		*dst = str
		return true
	}
	*dst = string(b)
	if len(shared) < 1024 {
		shared[*dst] = *dst
	}
	return true
}

func readBool(v *fastjson.Value, dst *bool) bool {
	b, err := v.Bool()
	*dst = b
	return err == nil
}

// readInt takes plain integers only (no fraction or exponent, which
// encoding/json refuses for an int).
func readInt(v *fastjson.Value, dst *int) bool {
	if v.Type() != fastjson.TypeNumber {
		return false
	}
	n, err := strconv.Atoi(string(v.MarshalTo(nil)))
	*dst = n
	return err == nil
}

func readTime(v *fastjson.Value, dst *time.Time) bool {
	b, err := v.StringBytes()
	if err != nil {
		return false
	}
	return dst.UnmarshalText(b) == nil
}
