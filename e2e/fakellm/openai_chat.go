package fakellm

import (
	"net/http"
	"strings"
)

// openAIChat is the OpenAI Chat Completions API (opencode through
// @ai-sdk/openai-compatible, pi): POST <base>/chat/completions with
// "stream": true for SSE chunks ending in "data: [DONE]"; GET <base>/models.
type openAIChat struct{}

func (openAIChat) api() API         { return APIOpenAIChat }
func (openAIChat) idPrefix() string { return "chatcmpl" }
func (openAIChat) failure(status int, msg string) any {
	return map[string]any{"error": map[string]any{"message": msg, "type": "fakellm_error", "code": status}}
}

func (openAIChat) match(method, path string) (string, bool) {
	switch {
	case method == http.MethodPost && strings.HasSuffix(path, "/chat/completions"):
		return opGenerate, true
	case method == http.MethodGet && strings.HasSuffix(path, "/models") && !strings.Contains(path, "/v1beta/"):
		return opModels, true
	}
	return "", false
}

func (openAIChat) extra(_ string, _ *Request, models []string) any {
	data := make([]any, len(models))
	for i, m := range models {
		data[i] = map[string]any{"id": m, "object": "model", "created": 0, "owned_by": "fakellm"}
	}
	return map[string]any{"object": "list", "data": data}
}

func (openAIChat) parse(req *Request, _ *http.Request) error {
	b := req.Body
	req.Model, _ = b["model"].(string)
	req.Stream, _ = b["stream"].(bool)
	msgs, _ := b["messages"].([]any)
	if len(msgs) == 0 {
		return errNoMessages
	}
	for _, raw := range msgs {
		m, _ := raw.(map[string]any)
		role, _ := m["role"].(string)
		text := openAIContentText(m["content"])
		switch role {
		case "system", "developer":
			req.System = joinNonEmpty(req.System, text)
			req.Messages = append(req.Messages, Message{Role: "system", Text: text})
		case "tool":
			id, _ := m["tool_call_id"].(string)
			name, _ := m["name"].(string)
			req.Messages = append(req.Messages, Message{Role: "tool", ToolResults: []ToolResult{{ID: id, Name: name, Output: text}}})
		default:
			msg := Message{Role: role, Text: text}
			calls, _ := m["tool_calls"].([]any)
			for _, rc := range calls {
				c, _ := rc.(map[string]any)
				fn, _ := c["function"].(map[string]any)
				id, _ := c["id"].(string)
				name, _ := fn["name"].(string)
				argStr, _ := fn["arguments"].(string)
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: id, Name: name, Args: parseArgs(argStr)})
			}
			req.Messages = append(req.Messages, msg)
		}
	}
	tools, _ := b["tools"].([]any)
	for _, rt := range tools {
		t, _ := rt.(map[string]any)
		fn, _ := t["function"].(map[string]any)
		name, _ := fn["name"].(string)
		desc, _ := fn["description"].(string)
		schema, _ := fn["parameters"].(map[string]any)
		req.Tools = append(req.Tools, Tool{Name: name, Description: desc, Schema: schema})
	}
	if rf, _ := b["response_format"].(map[string]any); rf != nil {
		if js, _ := rf["json_schema"].(map[string]any); js != nil {
			req.ResponseSchema, _ = js["schema"].(map[string]any)
		}
	}
	return nil
}

// openAIContentText is the text of a message content: a string or an array
// of parts ({"type":"text","text":…}).
func openAIContentText(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, p := range v {
			pm, _ := p.(map[string]any)
			if t, ok := pm["text"].(string); ok {
				parts = append(parts, t)
			}
		}
		return strings.Join(parts, "")
	}
	return ""
}

func (openAIChat) finishReason(a answer) string {
	if len(a.calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func (openAIChat) usage() map[string]any {
	return map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
}

func (o openAIChat) toolCalls(a answer, withIndex bool) []any {
	out := make([]any, len(a.calls))
	for i, c := range a.calls {
		tc := map[string]any{"id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": string(marshal(c.Args))}}
		if withIndex {
			tc["index"] = i
		}
		out[i] = tc
	}
	return out
}

func (o openAIChat) stream(a answer) []frame {
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": a.id, "object": "chat.completion.chunk", "created": a.created, "model": a.req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	first := true
	role := func(delta map[string]any) map[string]any {
		if first {
			delta["role"] = "assistant"
			first = false
		}
		return delta
	}
	frames := textFrames(a.rep, func(c string) any { return chunk(role(map[string]any{"content": c}), nil) })
	calls := o.toolCalls(a, true)
	for _, c := range calls {
		frames = append(frames, dataFrame(0, chunk(role(map[string]any{"tool_calls": []any{c}}), nil)))
	}
	last := chunk(role(map[string]any{}), o.finishReason(a))
	last["usage"] = o.usage()
	frames = append(frames, dataFrame(0, last), frame{data: []byte("data: [DONE]\n\n")})
	return frames
}

func (o openAIChat) single(a answer) any {
	msg := map[string]any{"role": "assistant", "content": nil}
	if t := a.rep.text(); t != "" {
		msg["content"] = t
	}
	if len(a.calls) > 0 {
		msg["tool_calls"] = o.toolCalls(a, false)
	}
	return map[string]any{"id": a.id, "object": "chat.completion", "created": a.created, "model": a.req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": o.finishReason(a)}},
		"usage":   o.usage()}
}

// parseArgs parses tool call arguments sent as a JSON string; a string
// that is not a JSON object is kept under "_raw".
func parseArgs(s string) map[string]any {
	if strings.TrimSpace(s) == "" {
		return map[string]any{}
	}
	var m map[string]any
	if err := jsonUnmarshal([]byte(s), &m); err != nil {
		return map[string]any{"_raw": s}
	}
	return m
}

func joinNonEmpty(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}
