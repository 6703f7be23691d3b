package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/intercom-dev/intercom/internal/lazyre"
)

// Interview is the structured question set of an interview_request.
type Interview struct {
	Title       string              `json:"title,omitempty"`
	Description string              `json:"description,omitempty"`
	Questions   []InterviewQuestion `json:"questions"`
}

// InterviewQuestion is one question.
type InterviewQuestion struct {
	ID       string            `json:"id"`
	Type     string            `json:"type"` // single, multi, text, image, info
	Question string            `json:"question"`
	Options  []InterviewOption `json:"options,omitempty"`
	Context  string            `json:"context,omitempty"`
}

// InterviewOption is a string or an object with a label.
type InterviewOption struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// UnmarshalJSON accepts "text" or {"label": "text", ...}.
func (o *InterviewOption) UnmarshalJSON(data []byte) error {
	var s string
	if json.Unmarshal(data, &s) == nil {
		o.Label = s
		return nil
	}
	type plain InterviewOption
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return errors.New("an option must be a string or an object with a label")
	}
	*o = InterviewOption(p)
	return nil
}

// ParseInterview decodes and validates an interview document.
func ParseInterview(data []byte) (*Interview, error) {
	var iv Interview
	if err := json.Unmarshal(data, &iv); err != nil {
		return nil, fmt.Errorf("interview is not valid JSON: %w", err)
	}
	if err := iv.Validate(); err != nil {
		return nil, err
	}
	return &iv, nil
}

// Validate checks an interview as pi-intercom does: at least one question,
// each with a unique id, a text, a known type, and options only where its
// type takes them.
func (iv *Interview) Validate() error {
	if len(iv.Questions) == 0 {
		return errors.New("interview: questions must not be empty")
	}
	seen := map[string]bool{}
	for i, q := range iv.Questions {
		where := fmt.Sprintf("interview question %d", i+1)
		if strings.TrimSpace(q.ID) == "" {
			return fmt.Errorf("%s: id must not be empty", where)
		}
		if seen[q.ID] {
			return fmt.Errorf("%s: duplicate id %q", where, q.ID)
		}
		seen[q.ID] = true
		if strings.TrimSpace(q.Question) == "" {
			return fmt.Errorf("%s (%s): question text must not be empty", where, q.ID)
		}
		switch q.Type {
		case "single", "multi":
			if len(q.Options) == 0 {
				return fmt.Errorf("%s (%s): type %s requires options", where, q.ID, q.Type)
			}
			for _, o := range q.Options {
				if strings.TrimSpace(o.Label) == "" {
					return fmt.Errorf("%s (%s): options must be non-empty strings or objects with a label", where, q.ID)
				}
			}
		case "text", "image", "info":
			if len(q.Options) > 0 {
				return fmt.Errorf("%s (%s): type %s does not take options", where, q.ID, q.Type)
			}
		default:
			return fmt.Errorf("%s (%s): invalid type %q: want single, multi, text, image or info", where, q.ID, q.Type)
		}
	}
	return nil
}

// Render formats the interview for the supervisor, with an answer example.
func (iv *Interview) Render() string {
	var b strings.Builder
	if iv.Title != "" {
		fmt.Fprintf(&b, "Interview: %s\n", iv.Title)
	}
	if iv.Description != "" {
		fmt.Fprintf(&b, "%s\n", iv.Description)
	}
	example := []map[string]any{}
	for _, q := range iv.Questions {
		fmt.Fprintf(&b, "\n- [%s] (%s) %s\n", q.ID, q.Type, q.Question)
		if q.Context != "" {
			fmt.Fprintf(&b, "  context: %s\n", q.Context)
		}
		for _, o := range q.Options {
			fmt.Fprintf(&b, "  * %s\n", o.Label)
		}
		switch q.Type {
		case "info":
		case "single":
			example = append(example, map[string]any{"id": q.ID, "value": q.Options[0].Label})
		case "multi":
			example = append(example, map[string]any{"id": q.ID, "value": []string{q.Options[0].Label}})
		default:
			example = append(example, map[string]any{"id": q.ID, "value": "..."})
		}
	}
	ex, _ := json.MarshalIndent(map[string]any{"responses": example}, "", "  ")
	fmt.Fprintf(&b, "\nReply with JSON of this shape:\n```json\n%s\n```\n", ex)
	return b.String()
}

// StructuredReply is a validated interview answer.
type StructuredReply struct {
	Responses []Response `json:"responses"`
}

// Response is one answer: a string, or a list of strings for multi.
type Response struct {
	ID    string `json:"id"`
	Value any    `json:"value"`
}

var fence = lazyre.New("(?s)```(?:json)?\\s*\\n(.*?)```")

// ParseStructuredReply extracts {responses:[…]} from a reply (the first
// fenced block, else the whole text) and checks it against the interview.
func ParseStructuredReply(text string, iv *Interview) (*StructuredReply, error) {
	body := strings.TrimSpace(text)
	if m := fence().FindStringSubmatch(text); m != nil {
		body = strings.TrimSpace(m[1])
	}
	if !strings.HasPrefix(body, "{") && !strings.HasPrefix(body, "[") {
		return nil, errors.New("reply is not JSON")
	}
	var raw struct {
		Responses []struct {
			ID    string          `json:"id"`
			Value json.RawMessage `json:"value"`
		} `json:"responses"`
	}
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		return nil, fmt.Errorf("reply JSON: %w", err)
	}
	if raw.Responses == nil {
		return nil, errors.New(`reply JSON has no "responses" array`)
	}
	byID := map[string]InterviewQuestion{}
	for _, q := range iv.Questions {
		byID[q.ID] = q
	}
	out := &StructuredReply{Responses: []Response{}}
	seen := map[string]bool{}
	for _, r := range raw.Responses {
		q, ok := byID[r.ID]
		if !ok || q.Type == "info" {
			return nil, fmt.Errorf("response id %q names no answerable question", r.ID)
		}
		if seen[r.ID] {
			return nil, fmt.Errorf("response id %q repeated", r.ID)
		}
		seen[r.ID] = true
		labels := map[string]bool{}
		for _, o := range q.Options {
			labels[o.Label] = true
		}
		switch q.Type {
		case "single":
			var v string
			if json.Unmarshal(r.Value, &v) != nil || !labels[v] {
				return nil, fmt.Errorf("response %q: want one of the option labels", r.ID)
			}
			out.Responses = append(out.Responses, Response{r.ID, v})
		case "multi":
			var v []string
			if json.Unmarshal(r.Value, &v) != nil {
				return nil, fmt.Errorf("response %q: want an array of option labels", r.ID)
			}
			for _, l := range v {
				if !labels[l] {
					return nil, fmt.Errorf("response %q: %q is not an option", r.ID, l)
				}
			}
			out.Responses = append(out.Responses, Response{r.ID, v})
		default:
			var v string
			if json.Unmarshal(r.Value, &v) != nil {
				return nil, fmt.Errorf("response %q: want a string", r.ID)
			}
			out.Responses = append(out.Responses, Response{r.ID, v})
		}
	}
	return out, nil
}
