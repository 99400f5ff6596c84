package fakellm

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// APIOpenAIResponses is the OpenAI Responses API (codex).
const APIOpenAIResponses API = "openai-responses"

// openAIResponses is the OpenAI Responses API (codex, codex-acp):
// POST <base>/responses with "stream": true for SSE events typed by their
// "type" field (response.created … response.completed), real-runtimes.md
// "codex". Conversation items come in "input"; function tools in "tools".
// The reasoning settings of a request ("reasoning": {"effort": …}) stay in
// Request.Body for tests to read.
type openAIResponses struct{}

func (openAIResponses) api() API         { return APIOpenAIResponses }
func (openAIResponses) idPrefix() string { return "resp" }
func (openAIResponses) failure(status int, msg string) any {
	return map[string]any{"error": map[string]any{"message": msg, "type": "fakellm_error", "code": fmt.Sprint(status)}}
}

func (openAIResponses) match(method, path string) (string, bool) {
	if method == http.MethodPost && strings.HasSuffix(path, "/responses") {
		return opGenerate, true
	}
	return "", false
}

// extra is never reached: match serves only model calls.
func (openAIResponses) extra(string, *Request, []string) any { return map[string]any{} }

func (openAIResponses) parse(req *Request, _ *http.Request) error {
	b := req.Body
	req.Model, _ = b["model"].(string)
	req.Stream, _ = b["stream"].(bool)
	if s, ok := b["instructions"].(string); ok && s != "" {
		req.System = s
		req.Messages = append(req.Messages, Message{Role: "system", Text: s})
	}
	switch in := b["input"].(type) {
	case string:
		req.Messages = append(req.Messages, Message{Role: "user", Text: in})
	case []any:
		for _, raw := range in {
			it, _ := raw.(map[string]any)
			typ, _ := it["type"].(string)
			switch {
			case typ == "function_call" || typ == "custom_tool_call" || typ == "local_shell_call":
				id, _ := it["call_id"].(string)
				name, _ := it["name"].(string)
				args, _ := it["arguments"].(string)
				if args == "" {
					args, _ = it["input"].(string)
				}
				req.Messages = append(req.Messages, Message{Role: "assistant", ToolCalls: []ToolCall{{ID: id, Name: name, Args: parseArgs(args)}}})
			case strings.HasSuffix(typ, "_call_output"):
				id, _ := it["call_id"].(string)
				out := responsesOutputText(it["output"])
				req.Messages = append(req.Messages, Message{Role: "tool", ToolResults: []ToolResult{{ID: id, Output: out}}})
			case typ == "message" || (typ == "" && it["role"] != nil):
				role, _ := it["role"].(string)
				if role == "developer" {
					role = "system"
				}
				req.Messages = append(req.Messages, Message{Role: role, Text: openAIContentText(it["content"])})
			}
		}
	}
	if len(req.Messages) == 0 {
		return errNoMessages
	}
	tools, _ := b["tools"].([]any)
	for _, rt := range tools {
		t, _ := rt.(map[string]any)
		name, _ := t["name"].(string)
		if name == "" {
			// Built-in tools (web_search, …) carry only a type.
			name, _ = t["type"].(string)
		}
		desc, _ := t["description"].(string)
		schema, _ := t["parameters"].(map[string]any)
		req.Tools = append(req.Tools, Tool{Name: name, Description: desc, Schema: schema})
	}
	if tf, _ := b["text"].(map[string]any); tf != nil {
		if f, _ := tf["format"].(map[string]any); f != nil {
			req.ResponseSchema, _ = f["schema"].(map[string]any)
		}
	}
	return nil
}

// responsesOutputText is a function call output: a string, an object with
// "content", or an array of content items.
func responsesOutputText(v any) string {
	switch o := v.(type) {
	case string:
		return o
	case []any:
		return openAIContentText(o)
	case map[string]any:
		if s, ok := o["content"].(string); ok {
			return s
		}
		return jsonString(o)
	}
	return ""
}

func (openAIResponses) usage() map[string]any {
	return map[string]any{"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 15}
}

// items is the answer's output: one message (when there is text), then one
// function_call per tool call.
func (o openAIResponses) items(a answer) []map[string]any {
	var out []map[string]any
	if t := a.rep.text(); t != "" {
		out = append(out, map[string]any{"id": "msg_" + a.id, "type": "message", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": t, "annotations": []any{}}}})
	}
	for _, c := range a.calls {
		out = append(out, map[string]any{"id": "fc_" + c.ID, "type": "function_call", "status": "completed",
			"call_id": c.ID, "name": c.Name, "arguments": string(marshal(c.Args))})
	}
	return out
}

func (o openAIResponses) response(a answer, status string, output []map[string]any) map[string]any {
	r := map[string]any{"id": a.id, "object": "response", "created_at": a.created, "status": status,
		"model": a.req.Model, "output": output}
	if status == "completed" {
		r["usage"] = o.usage()
	}
	return r
}

// stream is the event sequence codex accepts: created, in_progress, then
// per output item added → deltas → done, then completed with usage. Each
// SSE event names its type on an "event:" line too, as OpenAI does.
func (o openAIResponses) stream(a answer) []frame {
	seq := 0
	ev := func(delay time.Duration, typ string, fields map[string]any) frame {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		f := dataFrame(delay, fields)
		f.data = append([]byte("event: "+typ+"\n"), f.data...)
		return f
	}
	frames := []frame{
		ev(0, "response.created", map[string]any{"response": o.response(a, "in_progress", []map[string]any{})}),
		ev(0, "response.in_progress", map[string]any{"response": o.response(a, "in_progress", []map[string]any{})}),
	}
	items := o.items(a)
	idx := 0
	if a.rep.text() != "" {
		msg := items[0]
		id := msg["id"]
		frames = append(frames,
			ev(0, "response.output_item.added", map[string]any{"output_index": idx,
				"item": map[string]any{"id": id, "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}}),
			ev(0, "response.content_part.added", map[string]any{"item_id": id, "output_index": idx, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}}))
		for i, c := range a.rep.chunks() {
			d := time.Duration(0)
			if i > 0 {
				d = a.rep.ChunkDelay
			}
			frames = append(frames, ev(d, "response.output_text.delta", map[string]any{"item_id": id, "output_index": idx,
				"content_index": 0, "delta": c}))
		}
		frames = append(frames,
			ev(0, "response.output_text.done", map[string]any{"item_id": id, "output_index": idx, "content_index": 0,
				"text": a.rep.text()}),
			ev(0, "response.content_part.done", map[string]any{"item_id": id, "output_index": idx, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": a.rep.text(), "annotations": []any{}}}),
			ev(0, "response.output_item.done", map[string]any{"output_index": idx, "item": msg}))
		idx++
	}
	for _, it := range items[idx:] {
		added := map[string]any{}
		for k, v := range it {
			added[k] = v
		}
		added["status"], added["arguments"] = "in_progress", ""
		frames = append(frames,
			ev(0, "response.output_item.added", map[string]any{"output_index": idx, "item": added}),
			ev(0, "response.function_call_arguments.delta", map[string]any{"item_id": it["id"], "output_index": idx,
				"delta": it["arguments"]}),
			ev(0, "response.function_call_arguments.done", map[string]any{"item_id": it["id"], "output_index": idx,
				"arguments": it["arguments"]}),
			ev(0, "response.output_item.done", map[string]any{"output_index": idx, "item": it}))
		idx++
	}
	frames = append(frames, ev(0, "response.completed", map[string]any{"response": o.response(a, "completed", items)}))
	return frames
}

func (o openAIResponses) single(a answer) any { return o.response(a, "completed", o.items(a)) }
