package wire_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// The fuzz targets below feed arbitrary requests, as a peer could publish
// them, through the wire validation and judge each verdict by an oracle
// written separately from it: refSendProblem and refPublishProblem restate
// the documented rules (docs/json.md, docs/topics.md) without calling the
// field rules (fields.go) that ValidateSend and ValidatePublish use, so a
// rule that drifts in either place makes the two disagree. Both directions
// count: the broker must refuse what the reference refuses and accept what
// it accepts. An accepted request must also survive a JSON round trip
// unchanged and be accepted again.

// refBlank: empty or only Unicode white space.
func refBlank(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// refTextOK: no C0 control byte other than tab, LF, CR, and no DEL.
func refTextOK(s string) bool {
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b == '\t', b == '\n', b == '\r':
		case b < 0x20, b == 0x7f:
			return false
		}
	}
	return true
}

// refLabelOK: a label (thread, reply_to, names, ids) is not blank, at most
// 4096 bytes and has no C0 control byte at all, nor DEL.
func refLabelOK(s string) bool {
	if refBlank(s) || len(s) > 4096 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return false
		}
	}
	return true
}

// refSendProblem says why the documented rules refuse req, or "".
func refSendProblem(req wire.SendRequest) string {
	switch {
	case req.From == "":
		return "no sender"
	case refBlank(req.To):
		return "no target"
	case refBlank(req.Text) && len(req.Attachments) == 0:
		return "empty"
	case !refTextOK(req.Text):
		return "control character in text"
	}
	delivery := req.Delivery
	if delivery == "" {
		delivery = "steer"
	}
	if delivery != "steer" && delivery != "queue" && delivery != "passive" {
		return "bad delivery"
	}
	if delivery == "passive" && req.ExpectsReply {
		return "passive ask"
	}
	switch req.QueueMode {
	case "":
		if req.Thread != "" {
			return "thread without replace"
		}
	case "replace":
		if delivery != "queue" || req.Thread == "" || req.ExpectsReply || !refLabelOK(req.Thread) {
			return "bad replace"
		}
	default:
		return "bad queue mode"
	}
	if req.ReplyTo != "" && !refLabelOK(req.ReplyTo) {
		return "bad reply_to"
	}
	if req.ClientMsgID != "" && (!refLabelOK(req.ClientMsgID) || len(req.ClientMsgID) > 128) {
		return "bad client message id"
	}
	size := len(req.Text)
	for _, a := range req.Attachments {
		if a.Type != "file" && a.Type != "snippet" && a.Type != "context" {
			return "bad attachment type"
		}
		if !refLabelOK(a.Name) || (a.Language != "" && !refLabelOK(a.Language)) {
			return "bad attachment label"
		}
		size += len(a.Content) + len(a.Name) + len(a.Language) + len(a.Path)
	}
	if size > 1<<20 {
		return "too large"
	}
	if req.TimeoutMs < 0 {
		return "negative timeout"
	}
	return ""
}

// refTopicOK: an exact topic, optionally "@host" for a bridged one; the
// name is 1-200 of letters, digits and . _ : / -, starting with a letter or
// digit, with no empty path segment; a host is lower-case letters, digits,
// dots and dashes, starting with a letter or digit, at most 63 long.
func refTopicOK(t string) bool {
	if at := strings.LastIndex(t, "@"); at >= 0 {
		host := t[at+1:]
		if host == "" || len(host) > 63 || !refAlnum(host[0], false) {
			return false
		}
		for i := 0; i < len(host); i++ {
			if !refAlnum(host[i], false) && host[i] != '.' && host[i] != '-' {
				return false
			}
		}
		t = t[:at]
	}
	if t == "" || len(t) > 200 || !refAlnum(t[0], true) || strings.HasSuffix(t, "/") {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !refAlnum(c, true) && !strings.ContainsRune("._:/-", rune(c)) {
			return false
		}
		if c == '/' && i > 0 && t[i-1] == '/' {
			return false
		}
	}
	return true
}

func refAlnum(c byte, upper bool) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || upper && c >= 'A' && c <= 'Z'
}

// refPublishProblem says why the documented rules refuse req, or "".
func refPublishProblem(req wire.PublishRequest) string {
	event := req.Event
	if event == "" {
		event = "update"
	}
	switch {
	case !refTopicOK(req.Topic):
		return "bad topic"
	case event != "update" && event != "blocker" && event != "decision" && event != "release":
		return "bad event"
	case refBlank(req.Message):
		return "no message"
	case !refTextOK(req.Message):
		return "control character in message"
	case len(req.Message) > 1<<20:
		return "too large"
	case (req.Resource == "") != (req.Ownership == ""):
		return "resource without ownership or the reverse"
	case req.Resource != "" && (!refLabelOK(req.Resource) || len(req.Resource) > 200):
		return "bad resource"
	case req.Ownership != "" && req.Ownership != "held" && req.Ownership != "released":
		return "bad ownership"
	case event == "release" && req.Ownership == "held":
		return "release holding"
	case req.Version < 0:
		return "negative version"
	case req.ClientMsgID != "" && (!refLabelOK(req.ClientMsgID) || len(req.ClientMsgID) > 128):
		return "bad client message id"
	}
	return ""
}

// checkVerdict fails when the broker's verdict and the reference's differ.
func checkVerdict(t *testing.T, data []byte, got error, ref string) {
	t.Helper()
	if got == nil && ref != "" {
		t.Fatalf("accepted %s; the reference refuses it: %s", data, ref)
	}
	if got != nil && ref == "" {
		t.Fatalf("refused %s (%v); the reference accepts it", data, got)
	}
}

// jsonRoundTrip decodes the JSON encoding of v into a fresh T.
func jsonRoundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %+v: %v", v, err)
	}
	var out T
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("unmarshal %s: %v", data, err)
	}
	return out
}

func FuzzValidateSend(f *testing.F) {
	for _, s := range []string{
		`{"from":"a","to":"b","text":"hi"}`,
		`{"from":"a","to":"b","text":"x","delivery":"queue","queue_mode":"replace","thread":"t"}`,
		`{"from":"a","to":"b","text":"x","delivery":"passive","expects_reply":true}`,
		`{"from":"a","to":"b","attachments":[{"type":"file","name":"n","content":"c"}]}`,
		`{"from":"a","to":"b","attachments":[{"type":"snippet","name":" ","language":"go","content":"c"}]}`,
		`{"from":"a","to":"b","text":"x","reply_to":"m\t1","client_msg_id":"c-1"}`,
		`{"from":"a","to":"\u2003","text":"x"}`, `{"from":"a","to":"b","text":"\u0085\u00a0"}`,
		`{"from":"a","to":"b","text":"x","thread":"t"}`, `{"from":"a","to":"b","text":"x","timeout_ms":-1}`,
		`{"to":"b"}`, `[]`, `{"from":"a","to":"b","text":"\u0000"}`, `{"from":"a","to":"b","text":"tab\there\u007f"}`,
	} {
		f.Add([]byte(s))
	}
	// The length limits, at and one past each edge.
	for _, n := range []int{128, 129} {
		f.Add([]byte(`{"from":"a","to":"b","text":"x","client_msg_id":"` + strings.Repeat("c", n) + `"}`))
	}
	for _, n := range []int{4096, 4097} {
		f.Add([]byte(`{"from":"a","to":"b","text":"x","delivery":"queue","queue_mode":"replace","thread":"` + strings.Repeat("t", n) + `"}`))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var orig wire.SendRequest
		if json.Unmarshal(data, &orig) != nil {
			return
		}
		req := orig
		req.Attachments = append([]wire.Attachment(nil), orig.Attachments...)
		err := wire.ValidateSend(&req)
		checkVerdict(t, data, err, refSendProblem(orig))
		if err != nil {
			return
		}
		// The only change validation makes: an unset delivery becomes steer.
		want := orig
		if want.Delivery == "" {
			want.Delivery = wire.DeliverySteer
		}
		if !reflect.DeepEqual(req, want) {
			t.Fatalf("validation changed the request:\n got %+v\nwant %+v", req, want)
		}
		again := jsonRoundTrip(t, req)
		if err := wire.ValidateSend(&again); err != nil || !reflect.DeepEqual(again, req) {
			t.Fatalf("JSON round trip of accepted %+v: %+v, %v", req, again, err)
		}
	})
}

func FuzzValidatePublish(f *testing.F) {
	for _, s := range []string{
		`{"from":"a","topic":"t/x","message":"m"}`,
		`{"from":"a","topic":"t","event":"release","resource":"r","ownership":"held","message":"m"}`,
		`{"from":"a","topic":"build:ci@host-1.lan","event":"blocker","resource":"r","ownership":"released","message":"m"}`,
		`{"topic":"a b","message":"m"}`, `{"topic":"x/*","message":"m"}`, `{"topic":"a//b","message":"m"}`,
		`{"topic":"a/","message":"m"}`, `{"topic":"a@Host","message":"m"}`, `{"topic":"a@","message":"m"}`,
		`{"topic":"_a","message":"m"}`, `{"topic":"a","message":" \t"}`, `{"topic":"a","message":"m","version":-1}`,
		`{"topic":"a","message":"m","resource":"r"}`, `{"topic":"a","message":"m","client_msg_id":"\u007f"}`,
	} {
		f.Add([]byte(s))
	}
	for _, n := range []int{200, 201} {
		f.Add([]byte(`{"topic":"` + strings.Repeat("t", n) + `","message":"m","resource":"` + strings.Repeat("r", n) + `","ownership":"held"}`))
		f.Add([]byte(`{"topic":"t","message":"m","resource":"` + strings.Repeat("r", n) + `","ownership":"held"}`))
	}
	f.Add([]byte(`{"topic":"t@` + strings.Repeat("h", 64) + `","message":"m"}`))
	f.Add([]byte(`{"topic":"t","message":"m","client_msg_id":"` + strings.Repeat("c", 129) + `"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var orig wire.PublishRequest
		if json.Unmarshal(data, &orig) != nil {
			return
		}
		req := orig
		err := wire.ValidatePublish(&req)
		checkVerdict(t, data, err, refPublishProblem(orig))
		if err != nil {
			return
		}
		want := orig
		if want.Event == "" {
			want.Event = wire.EventUpdate
		}
		if req != want {
			t.Fatalf("validation changed the request:\n got %+v\nwant %+v", req, want)
		}
		again := jsonRoundTrip(t, req)
		if err := wire.ValidatePublish(&again); err != nil || again != req {
			t.Fatalf("JSON round trip of accepted %+v: %+v, %v", req, again, err)
		}
	})
}
