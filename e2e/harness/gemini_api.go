//go:build harness

package harness

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// NewGemini starts a stand-in of the Gemini API (what Gemini CLI streams
// from with GOOGLE_GEMINI_BASE_URL): POST
// /v1beta/models/M:streamGenerateContent?alt=sse answered with SSE lines of
// GenerateContentResponse, tool calls as functionCall parts;
// :generateContent gets the same answer as one JSON object and
// :countTokens a count. Requests that offer function declarations are the
// agent's conversation; others (side requests) get a short text.
func NewGemini(t *testing.T) *Model {
	return newModel(t, wire{
		path:   "/v1beta/models/",
		prefix: true,
		isMain: func(body map[string]any) bool {
			tools, _ := body["tools"].([]any)
			for _, tl := range tools {
				if decl, _ := tl.(map[string]any)["functionDeclarations"].([]any); len(decl) > 0 {
					return true
				}
			}
			return false
		},
		answer: geminiAnswer,
	})
}

func geminiAnswer(w http.ResponseWriter, r *Request, turn *Turn) {
	if strings.HasSuffix(r.Path, ":countTokens") {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"totalTokens": 100}`)
		return
	}
	text := "Done."
	var calls []Call
	if turn != nil {
		text, calls = turn.Text, turn.Calls
	}
	var parts []map[string]any
	if text != "" {
		parts = append(parts, map[string]any{"text": text})
	}
	for _, c := range calls {
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": c.Name, "args": c.Args}})
	}
	resp := map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
		"modelVersion":  "gemini-2.5-flash",
		"responseId":    fmt.Sprintf("standin-%d", r.N),
	}
	if !strings.HasSuffix(r.Path, ":streamGenerateContent") {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fmt.Fprintf(w, "data: %s\r\n\r\n", mustJSON(resp))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// geminiLastUserText is what the model was sent after its previous answer
// in a Gemini request: the contents after the last "model" one.
func geminiLastUserText(r *Request, b *strings.Builder) {
	contents, _ := r.JSON["contents"].([]any)
	for i := len(contents) - 1; i >= 0; i-- {
		c, _ := contents[i].(map[string]any)
		if c["role"] == "model" {
			break
		}
		writeStrings(b, c)
	}
}
