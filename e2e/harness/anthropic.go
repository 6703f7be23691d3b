//go:build harness

package harness

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// NewAnthropic starts a stand-in of the Anthropic Messages API (what
// `claude -p` streams from): POST /v1/messages answered with SSE
// message_start, content_block_start/delta/stop, message_delta and
// message_stop. Requests that offer tools are the agent's conversation;
// others (titles, summaries) get a short text.
func NewAnthropic(t *testing.T) *Model {
	return newModel(t, wire{
		path: "/v1/messages",
		isMain: func(body map[string]any) bool {
			tools, _ := body["tools"].([]any)
			return len(tools) > 0
		},
		answer: anthropicAnswer,
		other: func(w http.ResponseWriter, req *http.Request) bool {
			if req.URL.Path == "/v1/messages/count_tokens" {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"input_tokens": 100}`)
				return true
			}
			return false
		},
	})
}

func anthropicAnswer(w http.ResponseWriter, r *Request, turn *Turn) {
	text := "Done."
	var calls []Call
	if turn != nil {
		text, calls = turn.Text, turn.Calls
	}
	id := fmt.Sprintf("msg_standin_%d", r.N)
	model, _ := r.JSON["model"].(string)
	var blocks []map[string]any
	if text != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": text})
	}
	for i, c := range calls {
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_standin_%d_%d", r.N, i), "name": c.Name, "input": c.Args})
	}
	stop := "end_turn"
	if len(calls) > 0 {
		stop = "tool_use"
	}
	usage := map[string]any{"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	if stream, _ := r.JSON["stream"].(bool); !stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model, "content": blocks,
			"stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": usage,
	}})
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		case "tool_use":
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": mustJSON(b["input"])}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 10}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}
