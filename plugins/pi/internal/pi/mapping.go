package pi

import (
	"encoding/json"
	"strings"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// knownQuiet are pi frames the plugin recognises and maps to no event.
var knownQuiet = map[string]bool{
	"agent_start": true, "turn_start": true, "turn_end": true, "queue_update": true,
	"compaction_start": true, "compaction_end": true, "auto_retry_start": true, "auto_retry_end": true,
}

// fireAndForget are extension UI methods that need no answer.
var fireAndForget = map[string]bool{
	"notify": true, "setStatus": true, "setWidget": true, "setTitle": true, "set_editor_text": true,
}

// piEvent is the union of the fields of pi's events the plugin reads.
type piEvent struct {
	Type                  string          `json:"type"`
	Message               json.RawMessage `json:"message"`
	AssistantMessageEvent struct {
		Type  string `json:"type"`
		Delta string `json:"delta"`
	} `json:"assistantMessageEvent"`
	ToolCallID    string          `json:"toolCallId"`
	ToolName      string          `json:"toolName"`
	Args          json.RawMessage `json:"args"`
	PartialResult json.RawMessage `json:"partialResult"`
	Result        json.RawMessage `json:"result"`
	IsError       bool            `json:"isError"`
	WillRetry     bool            `json:"willRetry"`
	Error         string          `json:"error"`

	// extension_ui_request
	ID          string   `json:"id"`
	Method      string   `json:"method"`
	Title       string   `json:"title"`
	Options     []string `json:"options"`
	Placeholder string   `json:"placeholder"`
}

// piMessage is an agent message (message_start/message_end).
type piMessage struct {
	Role         string          `json:"role"`
	StopReason   string          `json:"stopReason"`
	ErrorMessage string          `json:"errorMessage"`
	Content      json.RawMessage `json:"content"`
	Usage        *struct {
		Input       int64 `json:"input"`
		Output      int64 `json:"output"`
		CacheRead   int64 `json:"cacheRead"`
		CacheWrite  int64 `json:"cacheWrite"`
		TotalTokens int64 `json:"totalTokens"`
	} `json:"usage"`
}

// text is the concatenated text parts of a message's content.
func (m piMessage) text() string {
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			return s
		}
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// toolKind is the contract's tool kind for a pi tool name.
func toolKind(name string) string {
	switch name {
	case "bash":
		return "bash"
	case "read", "ls", "grep", "find":
		return "read"
	case "write", "edit":
		return "write"
	default:
		return "other"
	}
}

// handle maps one pi event (not a response) to events and state.
func (s *session) handle(f frame) {
	var ev piEvent
	if err := json.Unmarshal(f.raw, &ev); err != nil {
		s.countUnknown(f.Type, json.RawMessage(f.raw))
		return
	}
	t := s.currentTurn()
	sid := s.id
	switch {
	case knownQuiet[ev.Type]:
	case ev.Type == "agent_end":
		if ev.WillRetry || t == nil {
			return
		}
		t.doneOnce.Do(func() { close(t.done) })
	case ev.Type == "extension_error":
		s.emit(runtime.NewEvent(runtime.EventWarning, map[string]any{"source": "pi_extension", "message": ev.Error, "session_id": sid}))
	case ev.Type == "message_start" || ev.Type == "message_end":
		var m piMessage
		_ = json.Unmarshal(ev.Message, &m)
		fields := map[string]any{"role": m.Role, "session_id": sid}
		if ev.Type == "message_end" {
			if m.StopReason != "" {
				fields["stopReason"] = m.StopReason
			}
			if m.Usage != nil {
				fields["usage"] = m.Usage
			}
			if m.Role == "assistant" && t != nil {
				t.mu.Lock()
				t.stop, t.errMsg = m.StopReason, m.ErrorMessage
				if txt := m.text(); txt != "" {
					t.finalText = txt
				}
				if u := m.Usage; u != nil {
					t.hasUsage = true
					t.usage.InputTokens += u.Input
					t.usage.OutputTokens += u.Output
					t.usage.CachedReadTokens += u.CacheRead
					total := u.TotalTokens
					if total == 0 {
						total = u.Input + u.Output
					}
					t.usage.TotalTokens += total
				}
				t.mu.Unlock()
			}
		}
		s.emit(runtime.NewEvent(runtime.EventType("avenor.message."+strings.TrimPrefix(ev.Type, "message_")), fields))
	case ev.Type == "message_update":
		d := ev.AssistantMessageEvent
		switch d.Type {
		case "text_delta":
			s.emit(runtime.MessageChunk(sid, d.Delta))
		case "thinking_delta":
			s.emit(runtime.ThoughtChunk(sid, d.Delta))
		}
		if strings.HasSuffix(d.Type, "_delta") {
			s.emit(runtime.NewEvent("avenor.message.update", map[string]any{"delta_type": d.Type, "delta": d.Delta, "session_id": sid}))
		}
	case ev.Type == "tool_execution_start":
		if t != nil {
			t.mu.Lock()
			t.tools[ev.ToolCallID] = toolCall{name: ev.ToolName, args: ev.Args}
			t.lastTool = ev.ToolCallID
			t.mu.Unlock()
		}
		s.emit(runtime.NewEvent(runtime.EventToolCall, map[string]any{
			"toolCallId": ev.ToolCallID, "title": ev.ToolName, "kind": toolKind(ev.ToolName), "status": "pending",
			"rawInput": ev.Args, "session_update": "tool_call", "session_id": sid,
		}))
		s.emit(runtime.NewEvent("avenor.tool.start", map[string]any{"toolCallId": ev.ToolCallID, "toolName": ev.ToolName, "args": ev.Args, "session_id": sid}))
	case ev.Type == "tool_execution_update":
		s.emit(runtime.NewEvent(runtime.EventToolCallUpdate, map[string]any{
			"toolCallId": ev.ToolCallID, "kind": toolKind(ev.ToolName), "status": "in_progress",
			"rawOutput": ev.PartialResult, "session_update": "tool_call_update", "session_id": sid,
		}))
		s.emit(runtime.NewEvent("avenor.tool.update", map[string]any{"toolCallId": ev.ToolCallID, "toolName": ev.ToolName, "partialResult": ev.PartialResult, "session_id": sid}))
	case ev.Type == "tool_execution_end":
		if t != nil {
			t.mu.Lock()
			delete(t.tools, ev.ToolCallID)
			t.mu.Unlock()
		}
		status := "completed"
		if ev.IsError {
			status = "failed"
		}
		s.emit(runtime.NewEvent(runtime.EventToolCallUpdate, map[string]any{
			"toolCallId": ev.ToolCallID, "kind": toolKind(ev.ToolName), "status": status,
			"rawOutput": ev.Result, "session_update": "tool_call_update", "session_id": sid,
		}))
		s.emit(runtime.NewEvent("avenor.tool.end", map[string]any{"toolCallId": ev.ToolCallID, "toolName": ev.ToolName, "result": ev.Result, "isError": ev.IsError, "session_id": sid}))
	case ev.Type == "extension_ui_request":
		switch {
		case fireAndForget[ev.Method]:
		case ev.Method == "select" || ev.Method == "confirm" || ev.Method == "input" || ev.Method == "editor":
			s.openDialog(t, ev)
		default:
			s.countUnknown("extension_ui_request/"+ev.Method, json.RawMessage(f.raw))
		}
	default:
		s.countUnknown(ev.Type, json.RawMessage(f.raw))
	}
}

// openDialog turns an extension dialog into a permission request, asked
// without blocking the reader.
func (s *session) openDialog(t *turnState, ev piEvent) {
	d := &dialog{id: ev.ID, meth: ev.Method}
	if t == nil {
		// No turn to ask for: a dialog between turns is dismissed.
		s.answer(d, map[string]any{"cancelled": true})
		return
	}
	s.mu.Lock()
	s.dialogs[d.id] = d
	s.mu.Unlock()

	req := runtime.PermissionRequest{ID: ev.ID, Question: ev.Title, Fields: map[string]any{"ui_request_id": ev.ID, "method": ev.Method}}
	t.mu.Lock()
	if tc, ok := t.tools[t.lastTool]; ok {
		req.Tool = tc.name
		req.Fields["toolCallId"] = t.lastTool
		req.Fields["input"] = runtime.Truncate(string(tc.args), maxInputBytes)
	}
	t.mu.Unlock()
	if req.Tool == "" && strings.HasPrefix(ev.Title, gateTitlePrefix) {
		first, _, _ := strings.Cut(strings.TrimPrefix(ev.Title, gateTitlePrefix), "\n")
		req.Tool = strings.TrimSpace(first)
	}
	switch ev.Method {
	case "select":
		req.Fields["kind"] = "command"
		for _, o := range ev.Options {
			req.Options = append(req.Options, runtime.PermissionOption{ID: o, Kind: optionKind(o), Name: o})
		}
	case "confirm":
		req.Fields["kind"] = "confirm"
		req.Options = []runtime.PermissionOption{{ID: "yes", Kind: runtime.KindAllowOnce, Name: "Yes"}, {ID: "no", Kind: runtime.KindReject, Name: "No"}}
	default: // input, editor
		req.Fields["kind"] = "input"
		req.RequiresUserInput = true
		req.Options = []runtime.PermissionOption{{ID: "submit", Kind: runtime.KindAllowOnce, Name: "Submit", RequiresMessage: true}, {ID: "cancel", Kind: runtime.KindReject, Name: "Cancel"}}
	}
	go s.ask(t, d, req)
}

// optionKind guesses the kind of a select option by its label; the gate's
// own options are "Allow" and "Deny".
func optionKind(label string) string {
	l := strings.ToLower(label)
	switch {
	case strings.Contains(l, "always"):
		if strings.HasPrefix(l, "deny") || strings.HasPrefix(l, "reject") || strings.HasPrefix(l, "no") {
			return "reject_always"
		}
		return runtime.KindAllowAlways
	case strings.HasPrefix(l, "allow"), strings.HasPrefix(l, "yes"), strings.HasPrefix(l, "approve"), strings.HasPrefix(l, "accept"):
		return runtime.KindAllowOnce
	case strings.HasPrefix(l, "deny"), strings.HasPrefix(l, "no"), strings.HasPrefix(l, "reject"), strings.HasPrefix(l, "block"):
		return runtime.KindReject
	default:
		return "other"
	}
}

// ask waits for the host's decision and answers pi. A cancelled decision
// dismisses the dialog and then cancels the turn (runtime-protocols §7.2).
func (s *session) ask(t *turnState, d *dialog, req runtime.PermissionRequest) {
	dec, err := s.host.AskPermission(t.rt.Context(), req)
	if err != nil || dec.Outcome == runtime.OutcomeCancelled {
		s.answer(d, map[string]any{"cancelled": true})
		if err == nil {
			s.Runner.CancelTurn(t.rt)
		}
		return
	}
	allowed := dec.Allowed()
	switch d.meth {
	case "select":
		opt := dec.OptionID
		if !allowed && !hasOption(req.Options, opt) {
			opt = rejectOption(req.Options)
		}
		if opt == "" {
			s.answer(d, map[string]any{"cancelled": true})
			return
		}
		s.answer(d, map[string]any{"value": opt})
	case "confirm":
		s.answer(d, map[string]any{"confirmed": allowed})
	default:
		if !allowed {
			s.answer(d, map[string]any{"cancelled": true})
			return
		}
		v := dec.Message
		if v == "" {
			v = dec.OptionID
		}
		s.answer(d, map[string]any{"value": v})
	}
}

func rejectOption(opts []runtime.PermissionOption) string {
	for _, o := range opts {
		if runtime.NormalizeKind(o.Kind) == "reject" {
			return o.ID
		}
	}
	return ""
}

func hasOption(opts []runtime.PermissionOption, id string) bool {
	for _, o := range opts {
		if o.ID == id {
			return true
		}
	}
	return false
}
