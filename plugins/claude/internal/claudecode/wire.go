package claudecode

import (
	"encoding/json"
	"strings"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// Stream-json frames (runtime-protocols.md §5.1, §5.2). Every field is
// optional: Claude Code drops keys between versions and after interrupts
// (claude-code #94741).

// frame is the envelope every stdout line shares.
type frame struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`

	// control_request / control_cancel_request
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	// control_response
	Response *controlResponse `json:"response"`

	// assistant / user
	Message *apiMessage `json:"message"`

	// stream_event (--include-partial-messages)
	Event *streamEvent `json:"event"`

	// system/init
	Model         string `json:"model"`
	ClaudeVersion string `json:"claude_code_version"`
}

type controlResponse struct {
	Subtype   string          `json:"subtype"` // success or error
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response"`
	Error     string          `json:"error"`
}

// canUseTool is the request of a can_use_tool control_request.
type canUseTool struct {
	Subtype              string          `json:"subtype"`
	ToolName             string          `json:"tool_name"`
	DisplayName          string          `json:"display_name"`
	Input                json.RawMessage `json:"input"`
	ToolUseID            string          `json:"tool_use_id"`
	Description          string          `json:"description"`
	PermissionSuggestion json.RawMessage `json:"permission_suggestions"`
	BlockedPath          string          `json:"blocked_path"`
	DecisionReason       string          `json:"decision_reason"`
}

// apiUsage is a model call's (or a whole turn's) token counts.
type apiUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// input is all the input the model read: fresh, written to the cache and
// read from it.
func (u apiUsage) input() int64 {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

type apiMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or blocks
	// Usage is the model call's: what it read is what the context held.
	Usage *apiUsage `json:"usage"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// blocks are the content blocks of a message; a string content is one
// text block.
func (m *apiMessage) blocks() []block {
	if m == nil || len(m.Content) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	var bs []block
	_ = json.Unmarshal(m.Content, &bs)
	return bs
}

type streamEvent struct {
	Type    string `json:"type"`
	Message *struct {
		ID string `json:"id"`
	} `json:"message"`
	Delta *struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
	} `json:"delta"`
}

// resultFrame is the end of a turn.
type resultFrame struct {
	Subtype           string            `json:"subtype"`
	IsError           bool              `json:"is_error"`
	Result            *string           `json:"result"`
	StopReason        string            `json:"stop_reason"`
	NumTurns          int64             `json:"num_turns"`
	DurationMS        int64             `json:"duration_ms"`
	TotalCostUSD      *float64          `json:"total_cost_usd"`
	SessionID         string            `json:"session_id"`
	Errors            json.RawMessage   `json:"errors"`
	Usage             *apiUsage         `json:"usage"`
	PermissionDenials []json.RawMessage `json:"permission_denials"`
	// ModelUsage is per model; contextWindow is its window's size.
	ModelUsage map[string]struct {
		InputTokens   int64 `json:"inputTokens"`
		ContextWindow int64 `json:"contextWindow"`
	} `json:"modelUsage"`
}

// contextWindow is the window of the model that read the most (the main
// model, not a side one), 0 when the result names none.
func (r resultFrame) contextWindow() int64 {
	var most, window int64
	for _, m := range r.ModelUsage {
		if m.ContextWindow > 0 && (window == 0 || m.InputTokens > most) {
			most, window = m.InputTokens, m.ContextWindow
		}
	}
	return window
}

// knownTypes are the stdout message types this plugin understands; those
// it does not map to events (diagnostics) are dropped without counting.
var knownTypes = map[string]bool{
	"system": true, "assistant": true, "user": true, "stream_event": true, "result": true,
	"control_request": true, "control_response": true, "control_cancel_request": true,
	"keep_alive": true, "tool_progress": true, "rate_limit_event": true, "auth_status": true,
}

// toolKind is the contract's tool kind (docs/events.md#backend-events) for a Claude Code tool name.
func toolKind(name string) string {
	switch name {
	case "Bash", "BashOutput", "KillShell", "KillBash":
		return "execute"
	case "Read", "NotebookRead":
		return "read"
	case "Edit", "MultiEdit", "Write", "NotebookEdit":
		return "edit"
	case "Glob", "Grep", "LS":
		return "search"
	case "WebFetch", "WebSearch":
		return "fetch"
	case "Task", "Agent":
		return "think"
	}
	return "other"
}

// toolTitle is a short title for a tool call: the tool and what it acts on.
func toolTitle(name string, input json.RawMessage) string {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	for _, k := range []string{"description", "command", "file_path", "path", "pattern", "url", "query"} {
		if v, ok := in[k].(string); ok && strings.TrimSpace(v) != "" {
			return name + ": " + runtime.Truncate(strings.TrimSpace(v), 120)
		}
	}
	return name
}

func rawJSON(r json.RawMessage) any {
	if len(r) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(r, &v) != nil {
		return string(r)
	}
	return v
}

// resultText is a tool_result's content as text.
func resultText(r json.RawMessage) string {
	var s string
	if json.Unmarshal(r, &s) == nil {
		return s
	}
	var bs []block
	if json.Unmarshal(r, &bs) == nil {
		var parts []string
		for _, b := range bs {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			}
		}
		return strings.Join(parts, "")
	}
	return string(r)
}

func toolCallEvent(sid string, b block) runtime.Event {
	return runtime.NewEvent(runtime.EventToolCall, map[string]any{
		"session_id": sid, "session_update": "tool_call",
		"toolCallId": b.ID, "title": toolTitle(b.Name, b.Input), "kind": toolKind(b.Name),
		"status": "pending", "rawInput": rawJSON(b.Input), "tool": b.Name,
	})
}

func toolResultEvent(sid string, b block, kind string) runtime.Event {
	status := "completed"
	if b.IsError {
		status = "failed"
	}
	text := resultText(b.Content)
	return runtime.NewEvent(runtime.EventToolCallUpdate, map[string]any{
		"session_id": sid, "session_update": "tool_call_update",
		"toolCallId": b.ToolUseID, "kind": kind, "status": status,
		"content":   []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": runtime.Truncate(text, 64<<10)}}},
		"rawOutput": map[string]any{"output": runtime.Truncate(text, 64<<10), "is_error": b.IsError},
	})
}

func nativeEvent(nativeType, sid string, line []byte) runtime.Event {
	var payload any
	if json.Unmarshal(line, &payload) != nil {
		payload = string(line)
	}
	f := map[string]any{"native_type": nativeType, "payload": payload}
	if sid != "" {
		f["session_id"] = sid
	}
	return runtime.NewEvent(runtime.EventNative, f)
}

// eventTypes are every event type claude-stream emits.
var eventTypes = []runtime.EventType{
	runtime.EventMessageChunk, runtime.EventThoughtChunk, runtime.EventToolCall,
	runtime.EventToolCallUpdate, runtime.EventWarning, runtime.EventNative,
}
