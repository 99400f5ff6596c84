package channel

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Tool names (docs/backends.md#claude-channel-plugin-claude-experimental).
const (
	ToolReport = "avenor_report"
	ToolFinish = "avenor_finish"
	ToolReply  = "avenor_reply"
	ToolSend   = "avenor_send"
	ToolUpsend = "avenor_upsend"
)

type toolDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
}

func enumOf(vals []string) map[string]any { return map[string]any{"type": "string", "enum": vals} }

var sendSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"to_run_id": map[string]any{"type": "string", "description": "run id of the receiving avenor session"},
		"message":   map[string]any{"type": "string"},
		"role":      map[string]any{"type": "string", "description": "optional role of the sender, e.g. reviewer"},
	},
	"required": []string{"to_run_id", "message"},
}

var toolDefs = []toolDef{
	{ToolReport, "Report progress to avenor (shown to whoever drives this session).", map[string]any{
		"type": "object",
		"properties": map[string]any{
			"state":   enumOf(ReportStates),
			"payload": map[string]any{"description": "free-form detail: a string or an object"},
		},
		"required": []string{"state"},
	}},
	{ToolFinish, "Tell avenor the current request is finished. Call it exactly once per request, last.", map[string]any{
		"type": "object",
		"properties": map[string]any{
			"status":        enumOf(FinishStatuses),
			"summary":       map[string]any{"type": "string", "description": "what was done, one paragraph"},
			"files_changed": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"details":       map[string]any{"type": "object"},
		},
		"required": []string{"status", "summary"},
	}},
	{ToolReply, "Answer a channel message (to = its ctrl_id or sender).", map[string]any{
		"type": "object",
		"properties": map[string]any{
			"to":      map[string]any{"type": "string"},
			"payload": map[string]any{"description": "the answer: a string or an object"},
		},
		"required": []string{"to"},
	}},
	{ToolSend, "Send a message to another avenor run.", sendSchema},
	{ToolUpsend, "Send a message up to the avenor run that started this one.", sendSchema},
}

// callTool runs one avenor_* tool against the broker. Argument errors and
// broker refusals are tool results with isError (the model can correct
// them); only unknown tools are protocol errors.
func (s *sidecar) callTool(ctx context.Context, name string, args json.RawMessage) (any, *rpcError) {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	var (
		path string
		body any
		err  error
	)
	switch name {
	case ToolReport:
		var r ReportRequest
		if err = json.Unmarshal(args, &r); err == nil && !slices.Contains(ReportStates, r.State) {
			err = fmt.Errorf("state must be one of %s", strings.Join(ReportStates, ", "))
		}
		r.Auth, path, body = s.auth(), "/report", &r
	case ToolFinish:
		var r FinishRequest
		if err = json.Unmarshal(args, &r); err == nil && !slices.Contains(FinishStatuses, r.Status) {
			err = fmt.Errorf("status must be one of %s", strings.Join(FinishStatuses, ", "))
		}
		r.Auth, path, body = s.auth(), "/finish", &r
	case ToolReply:
		var r ReplyRequest
		if err = json.Unmarshal(args, &r); err == nil && r.To == "" {
			err = fmt.Errorf("to is required")
		}
		r.Auth, path, body = s.auth(), "/reply", &r
	case ToolSend, ToolUpsend:
		var r SendRequest
		if err = json.Unmarshal(args, &r); err == nil && (r.ToRunID == "" || r.Message == "") {
			err = fmt.Errorf("to_run_id and message are required")
		}
		r.Auth, r.Up, path, body = s.auth(), name == ToolUpsend, "/send", &r
	default:
		return nil, &rpcError{Code: codeInvalidParams, Message: "unknown tool: " + name}
	}
	if err != nil {
		return toolResult(fmt.Sprintf("%s: invalid arguments: %v", name, err), true), nil
	}
	var out map[string]any
	if err := s.post(ctx, path, body, &out); err != nil {
		return toolResult(fmt.Sprintf("%s failed: %v", name, err), true), nil
	}
	text := "ok"
	if id, ok := out["ctrl_id"].(string); ok {
		text = "queued as " + id
	}
	return toolResult(text, false), nil
}

func toolResult(text string, isError bool) map[string]any {
	return map[string]any{"content": []map[string]any{{"type": "text", "text": text}}, "isError": isError}
}
