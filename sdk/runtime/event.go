package runtime

// Event is one event of the contract's vocabulary: a type and the flat fields
// of its JSON object, without the fields the host stamps (seq, ts, run_id,
// run_label, runtime_id). Fields must marshal to a JSON object.
type Event struct {
	Type   string
	Fields map[string]any
}

// NewEvent builds an event; fields may be nil.
func NewEvent(typ string, fields map[string]any) Event {
	if fields == nil {
		fields = map[string]any{}
	}
	return Event{Type: typ, Fields: fields}
}

// Canonical event types a backend may emit (contract §2.2), and the escape
// hatch for native frames without a mapping.
const (
	EventMessageChunk     = "agent.message_chunk"
	EventThoughtChunk     = "agent.thought_chunk"
	EventUserMessageChunk = "user.message_chunk"
	EventToolCall         = "tool.call"
	EventToolCallUpdate   = "tool.call_update"
	EventPlan             = "session.plan"
	EventWarning          = "avenor.warning"
	// EventNative carries a native frame the plugin does not map:
	// native_type is the method or update kind, payload the raw object.
	EventNative = "avenor.native"
)

// MessageChunk is the canonical agent.message_chunk with ACP's content shape.
func MessageChunk(sessionID, text string) Event {
	return chunk(EventMessageChunk, "agent_message_chunk", sessionID, text)
}

// ThoughtChunk is the canonical agent.thought_chunk.
func ThoughtChunk(sessionID, text string) Event {
	return chunk(EventThoughtChunk, "agent_thought_chunk", sessionID, text)
}

func chunk(typ, update, sessionID, text string) Event {
	f := map[string]any{
		"content":        map[string]any{"type": "text", "text": text},
		"session_update": update,
	}
	if sessionID != "" {
		f["session_id"] = sessionID
	}
	return Event{Type: typ, Fields: f}
}
