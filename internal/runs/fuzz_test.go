package runs

import "testing"

func FuzzParseInterview(f *testing.F) {
	for _, s := range []string{
		`{"questions":[{"id":"a","type":"single","question":"q","options":["x","y"]}]}`,
		`{"title":"t","questions":[{"id":"a","type":"text","question":"q"},{"id":"b","type":"multi","question":"q","options":[{"label":"l"}]}]}`,
		`{"questions":[]}`, `[]`, `{"questions":[{"id":"a","type":"info","question":"q","options":["x"]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		iv, err := ParseInterview(data)
		if err != nil {
			return
		}
		if err := iv.Validate(); err != nil {
			t.Fatalf("parsed interview does not validate: %v", err)
		}
		_ = iv.Render()
	})
}

func FuzzParseStructuredReply(f *testing.F) {
	iv := &Interview{Questions: []InterviewQuestion{
		{ID: "api", Type: "single", Question: "q", Options: []InterviewOption{{Label: "Stable"}, {Label: "Beta"}}},
		{ID: "many", Type: "multi", Question: "q", Options: []InterviewOption{{Label: "a"}, {Label: "b"}}},
		{ID: "note", Type: "text", Question: "q"},
		{ID: "ctx", Type: "info", Question: "q"},
	}}
	for _, s := range []string{
		`{"responses":[{"id":"api","value":"Stable"}]}`,
		"Sure:\n```json\n{\"responses\":[{\"id\":\"many\",\"value\":[\"a\",\"b\"]}]}\n```",
		`{"responses":[{"id":"ctx","value":"x"}]}`, `plain text`, `{"responses":[{"id":"api","value":"Nope"}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		sr, err := ParseStructuredReply(text, iv)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, r := range sr.Responses {
			if r.ID == "ctx" || seen[r.ID] {
				t.Fatalf("accepted response %q (info or repeated) from %q", r.ID, text)
			}
			seen[r.ID] = true
		}
	})
}
