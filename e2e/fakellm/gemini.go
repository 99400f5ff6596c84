package fakellm

import (
	"net/http"
	"strings"
)

// gemini is the Gemini API (gemini-cli through @google/genai, with
// GOOGLE_GEMINI_BASE_URL pointing here):
// POST /v1beta/models/<model>:streamGenerateContent?alt=sse (SSE),
// :generateContent, :countTokens; GET /v1beta/models.
type gemini struct{}

func (gemini) api() API         { return APIGemini }
func (gemini) idPrefix() string { return "resp" }

func (gemini) failure(status int, msg string) any {
	st := "INTERNAL"
	switch {
	case status == http.StatusTooManyRequests:
		st = "RESOURCE_EXHAUSTED"
	case status == http.StatusNotFound:
		st = "NOT_FOUND"
	case status < 500:
		st = "INVALID_ARGUMENT"
	}
	return map[string]any{"error": map[string]any{"code": status, "message": msg, "status": st}}
}

func (gemini) match(method, path string) (string, bool) {
	if !strings.Contains(path, "/models") {
		return "", false
	}
	switch {
	case method == http.MethodPost && (strings.HasSuffix(path, ":streamGenerateContent") || strings.HasSuffix(path, ":generateContent")):
		return opGenerate, true
	case method == http.MethodPost && strings.HasSuffix(path, ":countTokens"):
		return opCountTokens, true
	case method == http.MethodGet && strings.Contains(path, "/v1beta/models"):
		return opModels, true
	}
	return "", false
}

func (gemini) extra(op string, _ *Request, models []string) any {
	if op == opCountTokens {
		return map[string]any{"totalTokens": 10}
	}
	list := make([]any, len(models))
	for i, m := range models {
		list[i] = map[string]any{"name": "models/" + m, "displayName": m,
			"supportedGenerationMethods": []string{"generateContent", "streamGenerateContent", "countTokens"}}
	}
	return map[string]any{"models": list}
}

// geminiModel is the model id in .../models/<model>:<method>.
func geminiModel(path string) string {
	i := strings.LastIndex(path, "models/")
	if i < 0 {
		return ""
	}
	m := path[i+len("models/"):]
	if j := strings.LastIndexByte(m, ':'); j >= 0 {
		m = m[:j]
	}
	return m
}

func (gemini) parse(req *Request, hr *http.Request) error {
	b := req.Body
	req.Model = geminiModel(hr.URL.Path)
	req.Stream = strings.HasSuffix(hr.URL.Path, ":streamGenerateContent")
	if si, _ := b["systemInstruction"].(map[string]any); si != nil {
		req.System = geminiPartsText(si["parts"])
	} else if s, ok := b["systemInstruction"].(string); ok {
		req.System = s
	}
	contents, _ := b["contents"].([]any)
	if len(contents) == 0 {
		return errNoMessages
	}
	for _, rc := range contents {
		c, _ := rc.(map[string]any)
		role, _ := c["role"].(string)
		if role == "model" {
			role = "assistant"
		}
		if role == "" {
			role = "user"
		}
		msg := Message{Role: role, Text: geminiPartsText(c["parts"])}
		parts, _ := c["parts"].([]any)
		for _, rp := range parts {
			p, _ := rp.(map[string]any)
			if fc, _ := p["functionCall"].(map[string]any); fc != nil {
				id, _ := fc["id"].(string)
				name, _ := fc["name"].(string)
				args, _ := fc["args"].(map[string]any)
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: id, Name: name, Args: args})
			}
			if fr, _ := p["functionResponse"].(map[string]any); fr != nil {
				id, _ := fr["id"].(string)
				name, _ := fr["name"].(string)
				msg.ToolResults = append(msg.ToolResults, ToolResult{ID: id, Name: name, Output: jsonString(fr["response"])})
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
		decls, _ := t["functionDeclarations"].([]any)
		for _, rd := range decls {
			d, _ := rd.(map[string]any)
			name, _ := d["name"].(string)
			desc, _ := d["description"].(string)
			schema, _ := d["parametersJsonSchema"].(map[string]any)
			if schema == nil {
				schema, _ = d["parameters"].(map[string]any)
			}
			req.Tools = append(req.Tools, Tool{Name: name, Description: desc, Schema: schema})
		}
	}
	if gc, _ := b["generationConfig"].(map[string]any); gc != nil {
		req.ResponseSchema, _ = gc["responseJsonSchema"].(map[string]any)
		if req.ResponseSchema == nil {
			req.ResponseSchema, _ = gc["responseSchema"].(map[string]any)
		}
	}
	return nil
}

// geminiPartsText joins the text parts.
func geminiPartsText(v any) string {
	parts, _ := v.([]any)
	var out []string
	for _, rp := range parts {
		p, _ := rp.(map[string]any)
		if t, ok := p["text"].(string); ok {
			out = append(out, t)
		}
	}
	return strings.Join(out, "")
}

// chunks are the response objects of a streamed answer: one per text
// chunk, one with every function call; the last carries finishReason and
// usage.
func (g gemini) chunks(a answer) ([]map[string]any, []int) {
	mk := func(parts []any) map[string]any {
		return map[string]any{
			"candidates":   []any{map[string]any{"content": map[string]any{"parts": parts, "role": "model"}, "index": 0}},
			"modelVersion": a.req.Model, "responseId": a.id}
	}
	var out []map[string]any
	var delays []int // index into text chunks for delay, -1 for none
	for i, c := range a.rep.chunks() {
		out = append(out, mk([]any{map[string]any{"text": c}}))
		delays = append(delays, i)
	}
	if len(a.calls) > 0 {
		parts := make([]any, len(a.calls))
		for i, c := range a.calls {
			args := c.Args
			if args == nil {
				args = map[string]any{}
			}
			parts[i] = map[string]any{"functionCall": map[string]any{"name": c.Name, "args": args}}
		}
		out = append(out, mk(parts))
		delays = append(delays, -1)
	}
	if len(out) == 0 {
		out = append(out, mk([]any{map[string]any{"text": ""}}))
		delays = append(delays, -1)
	}
	last := out[len(out)-1]
	last["candidates"].([]any)[0].(map[string]any)["finishReason"] = "STOP"
	last["usageMetadata"] = map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
	return out, delays
}

func (g gemini) stream(a answer) []frame {
	chunks, idx := g.chunks(a)
	frames := make([]frame, len(chunks))
	for i, c := range chunks {
		frames[i] = dataFrame(0, c)
		if idx[i] > 0 {
			frames[i].delay = a.rep.ChunkDelay
		}
	}
	return frames
}

func (g gemini) single(a answer) any {
	var parts []any
	if t := a.rep.text(); t != "" {
		parts = append(parts, map[string]any{"text": t})
	}
	for _, c := range a.calls {
		args := c.Args
		if args == nil {
			args = map[string]any{}
		}
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": c.Name, "args": args}})
	}
	if len(parts) == 0 {
		parts = []any{map[string]any{"text": ""}}
	}
	return map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"parts": parts, "role": "model"},
			"finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  a.req.Model, "responseId": a.id}
}
