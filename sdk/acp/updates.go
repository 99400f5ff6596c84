package acp

import (
	"encoding/json"
	"errors"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// canonical maps the session/update kinds of docs/events.md#backend-events to event types.
// Every other kind becomes an avenor.native event.
var canonical = map[string]runtime.EventType{
	"agent_message_chunk": runtime.EventMessageChunk,
	"agent_thought_chunk": runtime.EventThoughtChunk,
	"user_message_chunk":  runtime.EventUserMessageChunk,
	"tool_call":           runtime.EventToolCall,
	"tool_call_update":    runtime.EventToolCallUpdate,
	"plan":                runtime.EventPlan,
}

// EventTypes is every event type an ACP session emits; plugins list it in
// BackendInfo.EventTypes (adding their own, if any).
var EventTypes = []runtime.EventType{
	runtime.EventMessageChunk, runtime.EventThoughtChunk, runtime.EventUserMessageChunk,
	runtime.EventToolCall, runtime.EventToolCallUpdate, runtime.EventPlan,
	runtime.EventNative, runtime.EventWarning,
}

// maxTrackedTools bounds the tool calls remembered per session; past it the
// memory starts afresh (a stale update then gets one more synthetic
// tool.call, which is harmless).
const maxTrackedTools = 4096

// toolInfo is what the first news of a tool call said: the tool's name
// when a tool_call announced it (OpenCode titles it with the tool, "bash"),
// and its kind.
type toolInfo struct {
	name, kind string
}

// mapper turns session/update notifications into events, remembering tool
// calls so that the first news of one (a tool_call_update or a permission
// request, as Gemini sends) can be preceded by a tool.call.
type mapper struct {
	tools map[string]toolInfo
}

func newMapper() *mapper { return &mapper{tools: map[string]toolInfo{}} }

type updateParams struct {
	SessionID string          `json:"sessionId"`
	Update    json.RawMessage `json:"update"`
}

var errNoUpdate = errors.New("session/update without an update object")

// mapUpdate maps the params of one session/update to events: exactly one,
// except that a tool_call_update for a tool call never announced is
// preceded by a synthetic tool.call. known is false for kinds docs/events.md#backend-events
// does not map (they become avenor.native).
func (m *mapper) mapUpdate(params json.RawMessage) (events []runtime.Event, known bool, err error) {
	var p updateParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, false, err
	}
	var upd map[string]any
	if err := json.Unmarshal(p.Update, &upd); err != nil || upd == nil {
		return nil, false, errNoUpdate
	}
	kind, _ := upd["sessionUpdate"].(string)
	typ, ok := canonical[kind]
	if !ok {
		return []runtime.Event{nativeEvent(kind, p.SessionID, upd)}, false, nil
	}
	fields := make(map[string]any, len(upd)+1)
	for k, v := range upd {
		if k != "sessionUpdate" {
			fields[k] = v
		}
	}
	fields["session_update"] = kind
	if p.SessionID != "" {
		fields["session_id"] = p.SessionID
	}
	id, _ := upd["toolCallId"].(string)
	switch kind {
	case "tool_call":
		m.remember(id, upd, true)
	case "tool_call_update":
		if ev, ok := m.announce(id, p.SessionID, upd); ok {
			events = append(events, ev)
		}
	}
	return append(events, runtime.Event{Type: typ, Fields: fields}), true, nil
}

func (m *mapper) remember(id string, call map[string]any, announced bool) {
	if id == "" {
		return
	}
	if _, ok := m.tools[id]; ok {
		return
	}
	if len(m.tools) >= maxTrackedTools {
		m.tools = map[string]toolInfo{}
	}
	var info toolInfo
	info.kind, _ = call["kind"].(string)
	if announced {
		info.name, _ = call["title"].(string)
	}
	m.tools[id] = info
}

// announce returns a synthetic tool.call for a tool call not seen before
// (built from what the update or permission request says of it) and
// remembers it.
func (m *mapper) announce(id, sessionID string, call map[string]any) (runtime.Event, bool) {
	if id == "" {
		return runtime.Event{}, false
	}
	if _, ok := m.tools[id]; ok {
		return runtime.Event{}, false
	}
	m.remember(id, call, false)
	fields := map[string]any{}
	for _, k := range []string{"toolCallId", "title", "kind", "rawInput", "content", "locations"} {
		if v, ok := call[k]; ok {
			fields[k] = v
		}
	}
	fields["status"] = "pending"
	fields["session_update"] = "tool_call"
	fields["synthetic"] = true
	if sessionID != "" {
		fields["session_id"] = sessionID
	}
	return runtime.Event{Type: runtime.EventToolCall, Fields: fields}, true
}

// tool is the best-effort tool name of a tool call: the title of the
// tool_call that announced it (OpenCode names the tool there, then retitles
// it with the command), else its kind (Gemini announces none).
func (m *mapper) tool(id string) string {
	t := m.tools[id]
	if t.name != "" {
		return t.name
	}
	return t.kind
}

// nativeEvent is an avenor.native event: a frame passed on without a
// mapping (docs/events.md#avenornative).
func nativeEvent(nativeType, sessionID string, payload any) runtime.Event {
	f := map[string]any{"native_type": nativeType, "payload": payload}
	if sessionID != "" {
		f["session_id"] = sessionID
	}
	return runtime.Event{Type: runtime.EventNative, Fields: f}
}

// NativeEvent is an avenor.native event for a frame (method or update kind)
// a plugin passes on unmapped.
func NativeEvent(nativeType, sessionID string, payload any) runtime.Event {
	return nativeEvent(nativeType, sessionID, payload)
}
