package appserver

import (
	"encoding/json"
	"strings"

	"github.com/avenor-go/avenor/sdk/acp"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// quiet are notifications the plugin knows and deliberately does not pass
// on: lifecycle chatter whose content reaches the events another way (the
// turn's start and end, approvals, status flags) or diagnostics of no use
// to a harness. They are not unknown frames.
var quiet = map[string]bool{
	"thread/started":                  true,
	"thread/status/changed":           true,
	"serverRequest/resolved":          true,
	"remoteControl/status/changed":    true,
	"mcpServer/startupStatus/updated": true,
	"turn/diff/updated":               true,
	"item/plan/delta":                 true,
	"item/reasoning/summaryPartAdded": true,
	"item/fileChange/patchUpdated":    true,
	"thread/name/updated":             true,
	// Sent once initialize asks for the experimental API (docs/backends.md#codex-app-server-plugin-codex):
	// the thread's effective settings after turn/start (model, effort and
	// sandbox, which avenor itself set) and the UI's unread marker.
	"thread/settings/updated":  true,
	"thread/readState/changed": true,
}

// warnings are Codex diagnostics passed on as avenor.warning.
var warnings = map[string]bool{
	"warning": true, "configWarning": true, "deprecationNotice": true, "model/rerouted": true,
}

// notification is the envelope fields every turn-scoped notification has.
type notification struct {
	ThreadID string          `json:"threadId"`
	TurnID   string          `json:"turnId"`
	ItemID   string          `json:"itemId"`
	Delta    string          `json:"delta"`
	Item     json.RawMessage `json:"item"`
}

// item is the part of a ThreadItem the mapping reads.
type item struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Status           string          `json:"status"`
	Text             string          `json:"text"`
	Command          string          `json:"command"`
	Cwd              string          `json:"cwd"`
	AggregatedOutput *string         `json:"aggregatedOutput"`
	ExitCode         *int            `json:"exitCode"`
	Changes          json.RawMessage `json:"changes"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Result           json.RawMessage `json:"result"`
	Error            json.RawMessage `json:"error"`
	Query            string          `json:"query"`
}

// toolKind is the tool.call kind of a tool item, "" for items that are not
// tool calls.
func toolKind(typ string) string {
	switch typ {
	case "commandExecution":
		return "bash"
	case "fileChange":
		return "edit"
	case "mcpToolCall", "dynamicToolCall":
		return "mcp"
	case "webSearch":
		return "fetch"
	}
	return ""
}

func (it item) title() string {
	switch it.Type {
	case "commandExecution":
		return it.Command
	case "fileChange":
		return "apply file changes"
	case "mcpToolCall":
		return it.Server + "." + it.Tool
	case "webSearch":
		return "web search " + it.Query
	}
	if it.Tool != "" {
		return it.Tool
	}
	return it.Type
}

func (it item) rawInput() any {
	switch it.Type {
	case "commandExecution":
		return map[string]any{"command": it.Command, "cwd": it.Cwd}
	case "fileChange":
		return map[string]any{"changes": rawJSON(it.Changes)}
	case "webSearch":
		return map[string]any{"query": it.Query}
	}
	return rawJSON(it.Arguments)
}

// HandleNotification implements jsonrpc.Handler: one Codex notification, in
// stream order.
func (s *Session) HandleNotification(method string, params json.RawMessage) {
	var n notification
	if err := json.Unmarshal(params, &n); err != nil && len(params) > 0 {
		s.passNative(method, params)
		return
	}
	switch {
	case method == "turn/completed":
		s.turnCompleted(params)
	case method == "turn/started":
		s.turnStarted(params)
	case method == "account/rateLimits/updated":
		s.rateLimitsUpdated(params)
	case method == "item/agentMessage/delta":
		ev := runtime.MessageChunk(s.id, n.Delta)
		ev.Fields["messageId"] = n.ItemID
		s.emit(ev)
	case method == "item/reasoning/summaryTextDelta" || method == "item/reasoning/textDelta":
		ev := runtime.ThoughtChunk(s.id, n.Delta)
		ev.Fields["messageId"] = n.ItemID
		s.emit(ev)
	case method == "item/started" || method == "item/completed":
		s.itemEvent(method, n, params)
	case method == "item/commandExecution/outputDelta" || method == "item/fileChange/outputDelta":
		s.emit(s.toolUpdate(n.ItemID, "", "in_progress", map[string]any{"delta": n.Delta}))
	case method == "item/mcpToolCall/progress":
		var p struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(params, &p)
		s.emit(s.toolUpdate(n.ItemID, "mcp", "in_progress", map[string]any{"delta": p.Message}))
	case method == "thread/tokenUsage/updated":
		s.tokenUsage(n.TurnID, params)
	case method == "turn/plan/updated":
		s.plan(params)
	case method == "error":
		var p struct {
			Error struct {
				Message        string          `json:"message"`
				CodexErrorInfo json.RawMessage `json:"codexErrorInfo"`
			} `json:"error"`
			WillRetry bool `json:"willRetry"`
		}
		_ = json.Unmarshal(params, &p)
		s.emit(runtime.NewEvent(EventError, map[string]any{"source": "backend", "message": withAuthFix(errorInfo(p.Error.CodexErrorInfo), p.Error.Message),
			"will_retry": p.WillRetry, "codex_error_info": rawJSON(p.Error.CodexErrorInfo), "session_id": s.id}))
	case warnings[method]:
		var p struct {
			Message string `json:"message"`
			Summary string `json:"summary"`
		}
		_ = json.Unmarshal(params, &p)
		msg := p.Message
		if msg == "" {
			msg = p.Summary
		}
		if msg == "" {
			msg = string(params)
		}
		s.emit(runtime.NewEvent(runtime.EventWarning, map[string]any{"source": "runtime", "native_type": method, "message": msg}))
	case quiet[method]:
	default:
		s.passNative(method, params)
	}
}

// itemEvent maps item/started and item/completed: the avenor.item.*
// compatibility event always, and the canonical tool.call (started) or
// tool.call_update (completed) for tool items; a completed agentMessage is
// the turn's final output so far.
func (s *Session) itemEvent(method string, n notification, params json.RawMessage) {
	var it item
	if err := json.Unmarshal(n.Item, &it); err != nil || it.Type == "" {
		s.passNative(method, params)
		return
	}
	typ := EventItemStarted
	if method == "item/completed" {
		typ = EventItemCompleted
	}
	s.emit(runtime.NewEvent(typ, map[string]any{"item": rawJSON(n.Item), "item_type": it.Type,
		"threadId": n.ThreadID, "turnId": n.TurnID, "session_id": s.id}))
	kind := toolKind(it.Type)
	switch {
	case kind != "" && method == "item/started":
		s.emit(runtime.NewEvent(runtime.EventToolCall, map[string]any{"toolCallId": it.ID, "title": it.title(), "kind": kind,
			"status": "pending", "rawInput": it.rawInput(), "session_update": "tool_call", "session_id": s.id}))
	case kind != "":
		status := "completed"
		if it.Status != "completed" {
			status = "failed"
		}
		f := map[string]any{"title": it.title(), "codex_status": it.Status}
		if out := it.rawOutput(); out != nil {
			f["rawOutput"] = out
		}
		s.emit(s.toolUpdate(it.ID, kind, status, f))
	case it.Type == "agentMessage" && method == "item/completed":
		s.mu.Lock()
		if t := s.turn; t != nil {
			t.finalOutput, t.hasFinal = it.Text, true
		}
		s.mu.Unlock()
	}
}

func (it item) rawOutput() any {
	switch it.Type {
	case "commandExecution":
		out := map[string]any{}
		if it.AggregatedOutput != nil {
			out["output"] = *it.AggregatedOutput
		}
		if it.ExitCode != nil {
			out["exitCode"] = *it.ExitCode
		}
		return out
	case "mcpToolCall", "dynamicToolCall":
		return map[string]any{"result": rawJSON(it.Result), "error": rawJSON(it.Error)}
	}
	return nil
}

func (s *Session) toolUpdate(id, kind, status string, extra map[string]any) runtime.Event {
	f := map[string]any{"toolCallId": id, "status": status, "session_update": "tool_call_update", "session_id": s.id}
	if kind != "" {
		f["kind"] = kind
	}
	for k, v := range extra {
		f[k] = v
	}
	return runtime.NewEvent(runtime.EventToolCallUpdate, f)
}

// tokenUsage adds one model call's tokens ("last") to the turn's usage.
func (s *Session) tokenUsage(turnID string, params json.RawMessage) {
	var p struct {
		TokenUsage struct {
			Last struct {
				TotalTokens       int64 `json:"totalTokens"`
				InputTokens       int64 `json:"inputTokens"`
				CachedInputTokens int64 `json:"cachedInputTokens"`
				OutputTokens      int64 `json:"outputTokens"`
			} `json:"last"`
			ModelContextWindow int64 `json:"modelContextWindow"`
		} `json:"tokenUsage"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	l := p.TokenUsage.Last
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.turn
	if t == nil || (t.id != "" && turnID != "" && turnID != t.id) {
		return
	}
	if t.usage == nil {
		t.usage = &runtime.Usage{}
	}
	t.usage.InputTokens += l.InputTokens
	t.usage.OutputTokens += l.OutputTokens
	t.usage.CachedReadTokens += l.CachedInputTokens
	total := l.TotalTokens
	if total == 0 {
		total = l.InputTokens + l.OutputTokens
	}
	t.usage.TotalTokens += total
	if w := p.TokenUsage.ModelContextWindow; w > 0 {
		// The last call's tokens are what the context holds now.
		t.ctxUsed, t.ctxWindow = total, w
	}
}

// plan maps turn/plan/updated to session.plan with ACP's entry shape.
func (s *Session) plan(params json.RawMessage) {
	var p struct {
		Explanation string `json:"explanation"`
		Plan        []struct {
			Step   string `json:"step"`
			Status string `json:"status"`
		} `json:"plan"`
	}
	if json.Unmarshal(params, &p) != nil {
		s.passNative("turn/plan/updated", params)
		return
	}
	entries := make([]any, 0, len(p.Plan))
	for _, e := range p.Plan {
		status := e.Status
		if status == "inProgress" {
			status = "in_progress"
		}
		entries = append(entries, map[string]any{"content": e.Step, "status": status, "priority": "medium"})
	}
	f := map[string]any{"entries": entries, "session_update": "plan", "session_id": s.id}
	if p.Explanation != "" {
		f["explanation"] = p.Explanation
	}
	s.emit(runtime.NewEvent(runtime.EventPlan, f))
}

// turnCompleted ends the turn in flight with the stop-reason mapping of
// runtime-protocols.md §7.1.
func (s *Session) turnCompleted(params json.RawMessage) {
	var p struct {
		Turn struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Error  *struct {
				Message        string          `json:"message"`
				CodexErrorInfo json.RawMessage `json:"codexErrorInfo"`
			} `json:"error"`
		} `json:"turn"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		s.passNative("turn/completed", params)
		return
	}
	s.mu.Lock()
	t := s.turn
	if t == nil || (t.id != "" && p.Turn.ID != "" && p.Turn.ID != t.id) {
		s.mu.Unlock()
		s.log.Debug("turn/completed for no turn in flight", "turn", p.Turn.ID)
		return
	}
	res := runtime.TurnResult{Usage: t.usage, FinalOutput: t.finalOutput, HasFinalOutput: t.hasFinal, Extra: s.extra()}
	res.Extra["codex_turn_status"] = p.Turn.Status
	if t.ctxWindow > 0 {
		res.Extra[runtime.ExtraContextUsedTokens], res.Extra[runtime.ExtraContextWindowTokens] = t.ctxUsed, t.ctxWindow
	}
	info := ""
	if p.Turn.Error != nil {
		info = errorInfo(p.Turn.Error.CodexErrorInfo)
		res.Extra["error_message"] = withAuthFix(info, p.Turn.Error.Message)
		if info != "" {
			res.Extra["codex_error_info"] = info
		}
	}
	res.StopReason = stopReason(p.Turn.Status, info, t.rt.IsCancelled())
	if p.Turn.Error != nil && res.StopReason == runtime.StopError {
		t.err = rateLimitError(info, p.Turn.Error.Message, s.limitReset) // s.mu is held
	}
	t.result = res
	s.turn = nil // what follows belongs to no turn
	s.mu.Unlock()
	close(t.done)
}

// authFix says what to do when codex has no usable credentials.
const authFix = "codex is not authenticated: set OPENAI_API_KEY in [backends." + Name + "].env (or in avenor's environment), or run `codex login` as the user avenor runs as"

// withAuthFix adds authFix to the message of a failure for want of
// credentials (codexErrorInfo "unauthorized", an HTTP 401), which codex
// reports only in the stream: the host says it on stderr as it is.
func withAuthFix(info, msg string) string {
	low := strings.ToLower(msg)
	if info != "unauthorized" && !strings.Contains(low, "401") && !strings.Contains(low, "unauthorized") &&
		!strings.Contains(low, "api key") && !strings.Contains(low, "not logged in") {
		return msg
	}
	if msg == "" {
		return authFix
	}
	return msg + " (" + authFix + ")"
}

// errorInfo is the name of a codexErrorInfo: a string, or an object's
// only key ({"httpConnectionFailed": {…}}).
func errorInfo(raw json.RawMessage) string {
	var name string
	if json.Unmarshal(raw, &name) == nil {
		return name
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		for k := range obj {
			return k
		}
	}
	return ""
}

// stopReason maps turn.status (+ codexErrorInfo) to the contract's stop
// reasons (runtime-protocols.md §7.1).
func stopReason(status, info string, cancelled bool) runtime.StopReason {
	switch status {
	case "completed":
		return runtime.StopEndTurn
	case "interrupted":
		return runtime.StopCancelled
	case "failed":
		switch info {
		case "contextWindowExceeded":
			return runtime.StopMaxTokens
		case "cyberPolicy", "bioPolicy", "misalignmentPolicyViolation":
			return runtime.StopRefusal
		}
		return runtime.StopError
	}
	// An inProgress turn on an idle thread is an interrupted one (runtime-protocols.md §3.8).
	if cancelled {
		return runtime.StopCancelled
	}
	return runtime.StopError
}

// passNative forwards a frame without a mapping as avenor.native and
// counts it (protocol drift).
func (s *Session) passNative(method string, params json.RawMessage) {
	s.unknown.Add(1)
	s.emit(acp.NativeEvent(method, s.id, rawJSON(params)))
}
