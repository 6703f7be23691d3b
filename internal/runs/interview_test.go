package runs

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseInterviewValid(t *testing.T) {
	t.Parallel()
	iv, err := ParseInterview([]byte(`{
		"title": "API migration choices",
		"description": "Before I continue",
		"questions": [
			{"id": "api", "type": "single", "question": "Which API?", "options": ["Stable API", {"label": "Experimental API", "description": "faster"}]},
			{"id": "tags", "type": "multi", "question": "Which tags?", "options": ["a", "b", "c"]},
			{"id": "constraints", "type": "text", "question": "Constraints?", "context": "public error shape"},
			{"id": "shot", "type": "image", "question": "Screenshot path?"},
			{"id": "note", "type": "info", "question": "FYI: tests are slow."}
		]}`))
	if err != nil {
		t.Fatal(err)
	}
	if iv.Title != "API migration choices" || len(iv.Questions) != 5 {
		t.Fatalf("parsed %+v", iv)
	}
	want := []InterviewOption{{Label: "Stable API"}, {Label: "Experimental API", Description: "faster"}}
	if !reflect.DeepEqual(iv.Questions[0].Options, want) {
		t.Fatalf("options %+v, want %+v", iv.Questions[0].Options, want)
	}
	if iv.Questions[2].Context != "public error shape" {
		t.Fatalf("context lost: %+v", iv.Questions[2])
	}
}

func TestParseInterviewRules(t *testing.T) {
	t.Parallel()
	q := func(body string) string { return `{"questions":[` + body + `]}` }
	cases := []struct{ name, doc, want string }{
		{"not JSON", `{"questions": [`, "not valid JSON"},
		{"not an object", `"hello"`, "not valid JSON"},
		{"trailing data", `{"questions":[{"id":"a","type":"text","question":"x"}]} {"more":1}`, "not valid JSON"},
		{"no questions", `{}`, "must not be empty"},
		{"empty questions", `{"questions":[]}`, "must not be empty"},
		{"empty id", q(`{"id":"","type":"text","question":"x"}`), "id must not be empty"},
		{"blank id", q(`{"id":"  ","type":"text","question":"x"}`), "id must not be empty"},
		{"missing id", q(`{"type":"text","question":"x"}`), "id must not be empty"},
		{"duplicate id", q(`{"id":"a","type":"text","question":"x"},{"id":"a","type":"text","question":"y"}`), `duplicate id "a"`},
		{"empty question", q(`{"id":"a","type":"text","question":" "}`), "question text must not be empty"},
		{"single without options", q(`{"id":"a","type":"single","question":"x"}`), "type single requires options"},
		{"single empty options", q(`{"id":"a","type":"single","question":"x","options":[]}`), "type single requires options"},
		{"multi without options", q(`{"id":"a","type":"multi","question":"x"}`), "type multi requires options"},
		{"empty option string", q(`{"id":"a","type":"single","question":"x","options":["ok",""]}`), "options must be non-empty"},
		{"option without label", q(`{"id":"a","type":"multi","question":"x","options":[{"description":"d"}]}`), "options must be non-empty"},
		{"option of wrong kind", q(`{"id":"a","type":"single","question":"x","options":[3]}`), "option must be a string or an object"},
		{"text with options", q(`{"id":"a","type":"text","question":"x","options":["o"]}`), "type text does not take options"},
		{"image with options", q(`{"id":"a","type":"image","question":"x","options":["o"]}`), "type image does not take options"},
		{"info with options", q(`{"id":"a","type":"info","question":"x","options":["o"]}`), "type info does not take options"},
		{"bad type", q(`{"id":"a","type":"choice","question":"x"}`), `invalid type "choice"`},
		{"missing type", q(`{"id":"a","question":"x"}`), `invalid type ""`},
		{"second question bad", q(`{"id":"a","type":"text","question":"x"},{"id":"b","type":"single","question":"y"}`), "interview question 2 (b)"},
	}
	for _, c := range cases {
		_, err := ParseInterview([]byte(c.doc))
		if err == nil {
			t.Errorf("%s: ParseInterview accepted %s", c.name, c.doc)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.want)
		}
	}
}

func testInterview(t *testing.T) *Interview {
	t.Helper()
	iv, err := ParseInterview([]byte(`{"title":"T","questions":[
		{"id":"api","type":"single","question":"Which API?","options":["Stable API","Experimental API"]},
		{"id":"tags","type":"multi","question":"Tags?","options":["a","b","c"]},
		{"id":"constraints","type":"text","question":"Constraints?"},
		{"id":"shot","type":"image","question":"Screenshot?"},
		{"id":"note","type":"info","question":"FYI"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return iv
}

func TestParseStructuredReplyAccepts(t *testing.T) {
	t.Parallel()
	iv := testInterview(t)
	plain := `{"responses":[{"id":"api","value":"Stable API"},{"id":"tags","value":["a","c"]},{"id":"constraints","value":"Keep the error shape."},{"id":"shot","value":"/tmp/s.png"}]}`
	want := &StructuredReply{Responses: []Response{
		{"api", "Stable API"}, {"tags", []string{"a", "c"}}, {"constraints", "Keep the error shape."}, {"shot", "/tmp/s.png"},
	}}
	for name, text := range map[string]string{
		"plain":             plain,
		"plain with spaces": "\n  " + plain + "\n ",
		"fenced json":       "```json\n" + plain + "\n```",
		"fenced no lang":    "```\n" + plain + "\n```",
		"fenced in prose":   "Here you go:\n\n```json\n" + plain + "\n```\nThanks!",
		"first fence wins":  "```json\n" + plain + "\n```\nand not this:\n```json\n{\"responses\":[{\"id\":\"api\",\"value\":\"nope\"}]}\n```",
	} {
		got, err := ParseStructuredReply(text, iv)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", name, got, want)
		}
	}
	// A partial answer (not every question) is still a structured reply.
	got, err := ParseStructuredReply(`{"responses":[{"id":"api","value":"Experimental API"}]}`, iv)
	if err != nil || len(got.Responses) != 1 || got.Responses[0].Value != "Experimental API" {
		t.Fatalf("partial reply: %+v, %v", got, err)
	}
}

func TestParseStructuredReplyRejects(t *testing.T) {
	t.Parallel()
	iv := testInterview(t)
	cases := []struct{ name, text, want string }{
		{"prose", "Use the stable API.", "not JSON"},
		{"empty", "", "not JSON"},
		{"fenced prose", "```\nuse the stable one\n```", "not JSON"},
		{"bad JSON", `{"responses":[`, "reply JSON"},
		{"bad JSON in fence", "```json\n{\"responses\": [}\n```", "reply JSON"},
		{"array", `[{"id":"api","value":"Stable API"}]`, "reply JSON"},
		{"no responses", `{"answers":[]}`, `no "responses" array`},
		{"unknown id", `{"responses":[{"id":"nope","value":"x"}]}`, `"nope" names no answerable question`},
		{"info id", `{"responses":[{"id":"note","value":"ok"}]}`, `"note" names no answerable question`},
		{"repeated id", `{"responses":[{"id":"constraints","value":"a"},{"id":"constraints","value":"b"}]}`, `"constraints" repeated`},
		{"single not an option", `{"responses":[{"id":"api","value":"Beta API"}]}`, "want one of the option labels"},
		{"single as array", `{"responses":[{"id":"api","value":["Stable API"]}]}`, "want one of the option labels"},
		{"multi with bad option", `{"responses":[{"id":"tags","value":["a","z"]}]}`, `"z" is not an option`},
		{"multi as string", `{"responses":[{"id":"tags","value":"a"}]}`, "want an array of option labels"},
		{"text as number", `{"responses":[{"id":"constraints","value":42}]}`, "want a string"},
		{"image as object", `{"responses":[{"id":"shot","value":{"path":"x"}}]}`, "want a string"},
	}
	for _, c := range cases {
		got, err := ParseStructuredReply(c.text, iv)
		if err == nil {
			t.Errorf("%s: accepted %q as %+v", c.name, c.text, got)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.want)
		}
	}
}

// The answer example the supervisor is shown is itself a valid reply.
func TestInterviewRenderExampleParses(t *testing.T) {
	t.Parallel()
	iv := testInterview(t)
	text := iv.Render()
	for _, s := range []string{"Interview: T", "[api] (single) Which API?", "  * Stable API", "[note] (info) FYI", "```json"} {
		if !strings.Contains(text, s) {
			t.Errorf("render lacks %q:\n%s", s, text)
		}
	}
	sr, err := ParseStructuredReply(text, iv)
	if err != nil {
		t.Fatalf("the rendered example does not parse: %v\n%s", err, text)
	}
	ids := []string{}
	for _, r := range sr.Responses {
		ids = append(ids, r.ID)
	}
	if strings.Join(ids, ",") != "api,tags,constraints,shot" {
		t.Fatalf("example answers %v, want every non-info question", ids)
	}
}
