package fakellm

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// APIAnthropic is the Anthropic Messages API.
const APIAnthropic API = "anthropic"

// anthropic is the Anthropic Messages API (Claude Code with
// ANTHROPIC_BASE_URL pointing here, without /v1):
// POST /v1/messages (streamed as named SSE events when "stream": true),
// POST /v1/messages/count_tokens. Model lists (GET /v1/models) are answered
// by the Chat Completions dialect, which claims that path first.
type anthropic struct{}

func (anthropic) api() API         { return APIAnthropic }
func (anthropic) idPrefix() string { return "msg" }

func (anthropic) failure(status int, msg string) any {
	typ := "api_error"
	switch {
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status == http.StatusNotFound:
		typ = "not_found_error"
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	case status < 500:
		typ = "invalid_request_error"
	}
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
}

func (anthropic) match(method, path string) (string, bool) {
	if method != http.MethodPost {
		return "", false
	}
	switch {
	case strings.HasSuffix(path, "/v1/messages"):
		return opGenerate, true
	case strings.HasSuffix(path, "/v1/messages/count_tokens"):
		return opCountTokens, true
	}
	return "", false
}

func (anthropic) extra(string, *Request, []string) any {
	return map[string]any{"input_tokens": 10}
}

func (anthropic) parse(req *Request, _ *http.Request) error {
	b := req.Body
	req.Model, _ = b["model"].(string)
	req.Stream, _ = b["stream"].(bool)
	req.System = anthropicText(b["system"])
	msgs, _ := b["messages"].([]any)
	if len(msgs) == 0 {
		return errNoMessages
	}
	for _, rm := range msgs {
		m, _ := rm.(map[string]any)
		role, _ := m["role"].(string)
		msg := Message{Role: role, Text: anthropicText(m["content"])}
		blocks, _ := m["content"].([]any)
		for _, rb := range blocks {
			bl, _ := rb.(map[string]any)
			switch bl["type"] {
			case "tool_use":
				id, _ := bl["id"].(string)
				name, _ := bl["name"].(string)
				args, _ := bl["input"].(map[string]any)
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: id, Name: name, Args: args})
			case "tool_result":
				id, _ := bl["tool_use_id"].(string)
				out := anthropicText(bl["content"])
				msg.ToolResults = append(msg.ToolResults, ToolResult{ID: id, Output: out})
			}
		}
		if len(msg.ToolResults) > 0 && msg.Text == "" {
			msg.Role = "tool"
		}
		req.Messages = append(req.Messages, msg)
	}
	tools, _ := b["tools"].([]any)
	for _, rt := range tools {
		t, _ := rt.(map[string]any)
		name, _ := t["name"].(string)
		if name == "" {
			continue // server tools (web search…) have a type and no schema
		}
		desc, _ := t["description"].(string)
		schema, _ := t["input_schema"].(map[string]any)
		req.Tools = append(req.Tools, Tool{Name: name, Description: desc, Schema: schema})
	}
	return nil
}

// anthropicText is the text of a content value: a string, or the text
// blocks of a block list (tool results and system prompts come as either).
func anthropicText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	blocks, _ := v.([]any)
	var out []string
	for _, rb := range blocks {
		b, _ := rb.(map[string]any)
		if b["type"] == "text" {
			if t, ok := b["text"].(string); ok {
				out = append(out, t)
			}
		}
	}
	return strings.Join(out, "")
}

// stopReason is end_turn, or tool_use when the answer calls tools.
func (anthropic) stopReason(a answer) string {
	if len(a.calls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func (anthropic) usage(a answer) map[string]any {
	return map[string]any{"input_tokens": a.rep.inputTokens(), "output_tokens": 5,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
}

// eventFrame is a named SSE event: the Anthropic SDKs dispatch on the
// event name, not only on the data's type.
func eventFrame(delay time.Duration, name string, v any) frame {
	return frame{delay: delay, data: fmt.Appendf(nil, "event: %s\ndata: %s\n\n", name, marshal(v))}
}

func (d anthropic) stream(a answer) []frame {
	ev := func(delay time.Duration, v map[string]any) frame {
		return eventFrame(delay, v["type"].(string), v)
	}
	frames := []frame{ev(0, map[string]any{"type": "message_start", "message": map[string]any{
		"id": a.id, "type": "message", "role": "assistant", "model": a.req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": a.rep.inputTokens(), "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}})}
	index := 0
	if chunks := a.rep.chunks(); len(chunks) > 0 {
		frames = append(frames, ev(0, map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}}))
		for i, c := range chunks {
			delay := time.Duration(0)
			if i > 0 {
				delay = a.rep.ChunkDelay
			}
			frames = append(frames, ev(delay, map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "text_delta", "text": c}}))
		}
		frames = append(frames, ev(0, map[string]any{"type": "content_block_stop", "index": index}))
		index++
	}
	for _, c := range a.calls {
		args := c.Args
		if args == nil {
			args = map[string]any{}
		}
		frames = append(frames,
			ev(0, map[string]any{"type": "content_block_start", "index": index,
				"content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}}),
			ev(0, map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(marshal(args))}}),
			ev(0, map[string]any{"type": "content_block_stop", "index": index}))
		index++
	}
	return append(frames,
		ev(0, map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": d.stopReason(a), "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": 5}}),
		ev(0, map[string]any{"type": "message_stop"}))
}

func (d anthropic) single(a answer) any {
	content := []any{}
	if t := a.rep.text(); t != "" {
		content = append(content, map[string]any{"type": "text", "text": t})
	}
	for _, c := range a.calls {
		args := c.Args
		if args == nil {
			args = map[string]any{}
		}
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": args})
	}
	return map[string]any{"id": a.id, "type": "message", "role": "assistant", "model": a.req.Model,
		"content": content, "stop_reason": d.stopReason(a), "stop_sequence": nil, "usage": d.usage(a)}
}
