//go:build harness

package harness

import (
	"fmt"
	"net/http"
	"testing"
)

// NewChatCompletions starts a stand-in of the OpenAI Chat Completions API
// (what OpenCode's @ai-sdk/openai-compatible provider streams from):
// POST /v1/chat/completions answered with SSE chat.completion.chunk lines
// (assistant text, then tool_calls) and data: [DONE]. Requests that offer
// tools are the agent's conversation; the rest (titles) get plain text.
func NewChatCompletions(t *testing.T) *Model {
	return newModel(t, wire{path: "/v1/chat/completions", isMain: offersTools, answer: chatAnswer, other: openAIModels})
}

func chatAnswer(w http.ResponseWriter, r *Request, turn *Turn) {
	text := "Done."
	var calls []Call
	if turn != nil {
		text, calls = turn.Text, turn.Calls
	}
	if !r.Main {
		text, calls = "A title", nil
	}
	id := fmt.Sprintf("chatcmpl-standin-%d", r.N)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": "standin",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	data := func(v any) {
		fmt.Fprintf(w, "data: %s\n\n", mustJSON(v))
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	data(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if text != "" {
		data(chunk(map[string]any{"content": text}, nil))
	}
	for i, c := range calls {
		data(chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": fmt.Sprintf("call_standin_%d_%d", r.N, i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": mustJSON(c.Args)},
		}}}, nil))
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	data(chunk(map[string]any{}, finish))
	data(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": "standin", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
	fmt.Fprint(w, "data: [DONE]\n\n")
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
