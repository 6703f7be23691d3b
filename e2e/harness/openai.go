//go:build harness

package harness

import (
	"fmt"
	"net/http"
	"testing"
)

// NewResponses starts a stand-in of the OpenAI Responses API (what
// `codex exec` streams from through a model provider whose base_url points
// here): POST /v1/responses answered with SSE response.created,
// response.output_item.added/.done (assistant messages and function calls)
// and response.completed.
func NewResponses(t *testing.T) *Model {
	return newModel(t, wire{path: "/v1/responses", isMain: offersTools, answer: responsesAnswer, other: openAIModels})
}

// offersTools tells the agent's conversation (its requests offer tools)
// from a harness's side requests (titles, summaries).
func offersTools(body map[string]any) bool {
	tools, _ := body["tools"].([]any)
	return len(tools) > 0
}

// openAIModels answers GET /v1/models with an empty list.
func openAIModels(w http.ResponseWriter, req *http.Request) bool {
	if req.URL.Path != "/v1/models" {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"object":"list","data":[]}`)
	return true
}

func responsesAnswer(w http.ResponseWriter, r *Request, turn *Turn) {
	text := "Done."
	var calls []Call
	if turn != nil {
		text, calls = turn.Text, turn.Calls
	}
	id := fmt.Sprintf("resp_standin_%d", r.N)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id, "status": "in_progress", "output": []any{}}})
	var items []map[string]any
	if text != "" {
		items = append(items, map[string]any{"type": "message", "role": "assistant", "id": fmt.Sprintf("msg_standin_%d", r.N), "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}})
	}
	for i, c := range calls {
		item := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_standin_%d_%d", r.N, i), "status": "completed",
			"call_id": fmt.Sprintf("call_standin_%d_%d", r.N, i), "name": c.Name, "arguments": mustJSON(c.Args)}
		if c.Namespace != "" {
			item["namespace"] = c.Namespace
		}
		items = append(items, item)
	}
	for i, it := range items {
		added := map[string]any{}
		for k, v := range it {
			added[k] = v
		}
		added["status"] = "in_progress"
		if it["type"] == "function_call" {
			added["arguments"] = ""
		} else {
			added["content"] = []any{}
		}
		sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": i, "item": added})
		if it["type"] == "message" {
			sse(w, "response.output_text.delta", map[string]any{"type": "response.output_text.delta", "output_index": i, "content_index": 0, "item_id": it["id"], "delta": text})
		}
		sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": i, "item": it})
	}
	output := make([]any, len(items))
	for i, it := range items {
		output[i] = it
	}
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": id, "status": "completed", "output": output,
		"usage": map[string]any{"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens": 10,
			"output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 110},
	}})
}
