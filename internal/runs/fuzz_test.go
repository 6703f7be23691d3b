package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode"
)

// The oracles here are written apart from interview.go: refInterviewProblem
// judges a document from its generic JSON form by the rules of
// docs/runs.md, and the round trips feed what the parsers return back
// through them.

// errInconclusive: the reference does not judge this input (keys that only
// match a field case-insensitively, or a key given twice: encoding/json's
// own choices there are not part of the contract).
var errInconclusive = errors.New("inconclusive")

func refBlank(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return !unicode.IsSpace(r) }) < 0
}

// refFields checks that obj's keys are exact known field names or unrelated
// ones (which are ignored); a case variant of a known name is inconclusive.
func refFields(obj map[string]any, known ...string) error {
	for k := range obj {
		for _, name := range known {
			if k != name && strings.EqualFold(k, name) {
				return errInconclusive
			}
		}
	}
	return nil
}

// refString: a string field may be absent, null or a string.
func refString(obj map[string]any, key string) (string, bool) {
	switch v := obj[key].(type) {
	case nil:
		return "", true
	case string:
		return v, true
	}
	return "", false
}

// refInterviewProblem says why an interview document is refused, "" when
// it is valid, or errInconclusive.
func refInterviewProblem(data []byte) (string, error) {
	if hasDuplicateKey(data) {
		return "", errInconclusive
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return "not JSON", nil
	}
	top, ok := doc.(map[string]any)
	if doc != nil && !ok {
		return "not an object", nil
	}
	if err := refFields(top, "title", "description", "questions"); err != nil {
		return "", err
	}
	for _, k := range []string{"title", "description"} {
		if _, ok := refString(top, k); !ok {
			return k + " is not a string", nil
		}
	}
	qs, ok := top["questions"].([]any)
	if top["questions"] != nil && !ok {
		return "questions is not an array", nil
	}
	if len(qs) == 0 {
		return "no questions", nil
	}
	ids := map[string]bool{}
	problem := ""
	for _, raw := range qs {
		q, ok := raw.(map[string]any)
		if raw != nil && !ok {
			return "question is not an object", nil
		}
		if err := refFields(q, "id", "type", "question", "options", "context"); err != nil {
			return "", err
		}
		var text [4]string
		for i, k := range []string{"id", "type", "question", "context"} {
			if text[i], ok = refString(q, k); !ok {
				return k + " is not a string", nil
			}
		}
		id, typ, question := text[0], text[1], text[2]
		opts, ok := q["options"].([]any)
		if q["options"] != nil && !ok {
			return "options is not an array", nil
		}
		labels := 0
		for _, o := range opts {
			switch o := o.(type) {
			case nil:
			case string:
				if !refBlank(o) {
					labels++
				}
			case map[string]any:
				if err := refFields(o, "label", "description"); err != nil {
					return "", err
				}
				label, ok1 := refString(o, "label")
				_, ok2 := refString(o, "description")
				if !ok1 || !ok2 {
					return "option field is not a string", nil
				}
				if !refBlank(label) {
					labels++
				}
			default:
				return "option is neither a string nor an object", nil
			}
		}
		// Type errors anywhere refuse the document; the first broken rule
		// is only recorded, so a later type error still counts.
		switch {
		case problem != "":
		case refBlank(id):
			problem = "blank id"
		case ids[id]:
			problem = "duplicate id"
		case refBlank(question):
			problem = "blank question"
		case typ == "single" || typ == "multi":
			if len(opts) == 0 || labels != len(opts) {
				problem = "choice without proper options"
			}
		case typ == "text" || typ == "image" || typ == "info":
			if len(opts) > 0 {
				problem = "options on a non-choice question"
			}
		default:
			problem = "bad type"
		}
		ids[id] = true
	}
	return problem, nil
}

// hasDuplicateKey reports whether any JSON object in data repeats a key
// (false for data that is not JSON).
func hasDuplicateKey(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		keys  map[string]bool
		isObj bool
		atKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.isObj && top.atKey {
			if k, ok := tok.(string); ok {
				if top.keys[k] {
					return true
				}
				top.keys[k] = true
				top.atKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, isObj: true, atKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: the enclosing object expects a key next.
		if len(stack) > 0 && stack[len(stack)-1].isObj {
			stack[len(stack)-1].atKey = true
		}
	}
}

// normalised drops the difference between absent and empty options, which
// JSON (omitempty) does not keep.
func normalised(iv *Interview) *Interview {
	out := *iv
	out.Questions = append([]InterviewQuestion(nil), iv.Questions...)
	for i := range out.Questions {
		if len(out.Questions[i].Options) == 0 {
			out.Questions[i].Options = nil
		}
	}
	return &out
}

// FuzzParseInterview: ParseInterview accepts exactly what the reference
// accepts, and what it returns is re-encoded to a document it reads back
// as the same interview.
func FuzzParseInterview(f *testing.F) {
	for _, s := range []string{
		`{"questions":[{"id":"a","type":"single","question":"q","options":["x","y"]}]}`,
		`{"title":"t","questions":[{"id":"a","type":"text","question":"q"},{"id":"b","type":"multi","question":"q","options":[{"label":"l"}]}]}`,
		`{"questions":[]}`, `[]`, `null`, `{"questions":[{"id":"a","type":"info","question":"q","options":["x"]}]}`,
		`{"questions":[{"id":"a","type":"text","question":"q","options":[]}]}`,
		`{"questions":[{"id":"a","type":"single","question":"q","options":[null]}]}`,
		`{"questions":[{"id":"a","type":"single","question":"q","options":[{"label":"x","description":3}]}]}`,
		`{"questions":[{"id":"a","type":"image","question":"q","context":"c"}],"extra":1} `,
		`{"questions":[{"id":"a","type":"text","question":"q"}]} {"trailing":true}`,
		`{"questions":[{"id":"a","type":"text","question":"q"},{"id":"a","type":"bad","question":"q"}]}`,
		`{"questions":[{"id":"\u2003","type":"text","question":"q"}]}`, `{"questions":[null]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		iv, err := ParseInterview(data)
		ref, rerr := refInterviewProblem(data)
		if rerr == nil {
			if err == nil && ref != "" {
				t.Fatalf("accepted %s; the reference refuses it: %s", data, ref)
			}
			if err != nil && ref == "" {
				t.Fatalf("refused %s (%v); the reference accepts it", data, err)
			}
		}
		if err != nil {
			return
		}
		doc, err := json.Marshal(iv)
		if err != nil {
			t.Fatalf("marshal %+v: %v", iv, err)
		}
		again, err := ParseInterview(doc)
		if err != nil {
			t.Fatalf("re-encoded interview %s refused: %v", doc, err)
		}
		if !reflect.DeepEqual(normalised(again), normalised(iv)) {
			t.Fatalf("round trip of %s:\n got %+v\nwant %+v", data, again, iv)
		}
		_ = iv.Render()
	})
}

// FuzzParseStructuredReply: every accepted reply answers only answerable
// questions of the interview, once each, with values of the right kind
// taken from the options (checked here from the interview, not by the
// parser's own tables); and the result, encoded plainly or in a fence,
// parses back to the same reply.
func FuzzParseStructuredReply(f *testing.F) {
	iv := &Interview{Questions: []InterviewQuestion{
		{ID: "api", Type: "single", Question: "q", Options: []InterviewOption{{Label: "Stable"}, {Label: "Beta"}}},
		{ID: "many", Type: "multi", Question: "q", Options: []InterviewOption{{Label: "a"}, {Label: "b"}}},
		{ID: "note", Type: "text", Question: "q"},
		{ID: "shot", Type: "image", Question: "q"},
		{ID: "ctx", Type: "info", Question: "q"},
	}}
	for _, s := range []string{
		`{"responses":[{"id":"api","value":"Stable"}]}`,
		"Sure:\n```json\n{\"responses\":[{\"id\":\"many\",\"value\":[\"a\",\"b\"]}]}\n```",
		`{"responses":[{"id":"ctx","value":"x"}]}`, `plain text`, `{"responses":[{"id":"api","value":"Nope"}]}`,
		`{"responses":[{"id":"many","value":null},{"id":"note","value":null},{"id":"shot","value":"/x.png"}]}`,
		`{"responses":[{"id":"note","value":"a"},{"id":"note","value":"b"}]}`, `{"responses":[]}`,
	} {
		f.Add(s)
	}
	questions := map[string]InterviewQuestion{}
	for _, q := range iv.Questions {
		questions[q.ID] = q
	}
	isOption := func(q InterviewQuestion, v string) bool {
		for _, o := range q.Options {
			if o.Label == v {
				return true
			}
		}
		return false
	}
	f.Fuzz(func(t *testing.T, text string) {
		sr, err := ParseStructuredReply(text, iv)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, r := range sr.Responses {
			q, ok := questions[r.ID]
			if !ok || q.Type == "info" || seen[r.ID] {
				t.Fatalf("accepted response %q (unknown, info or repeated) from %q", r.ID, text)
			}
			seen[r.ID] = true
			switch v := r.Value.(type) {
			case string:
				if q.Type == "multi" || (q.Type == "single" && !isOption(q, v)) {
					t.Fatalf("response %q: value %q does not fit a %s question (from %q)", r.ID, v, q.Type, text)
				}
			case []string:
				if q.Type != "multi" {
					t.Fatalf("response %q: a list for a %s question (from %q)", r.ID, q.Type, text)
				}
				for _, l := range v {
					if !isOption(q, l) {
						t.Fatalf("response %q: %q is not an option (from %q)", r.ID, l, text)
					}
				}
			default:
				t.Fatalf("response %q: value of type %T (from %q)", r.ID, r.Value, text)
			}
		}
		body, err := json.Marshal(sr)
		if err != nil {
			t.Fatalf("marshal %+v: %v", sr, err)
		}
		for _, again := range []string{string(body), "Here:\n```json\n" + string(body) + "\n```\n"} {
			got, err := ParseStructuredReply(again, iv)
			if err != nil || !reflect.DeepEqual(got, sr) {
				t.Fatalf("round trip of %q through %q: %+v, %v; want %+v", text, again, got, err, sr)
			}
		}
	})
}
