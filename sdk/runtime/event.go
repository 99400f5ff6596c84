package runtime

import "time"

// Event is one event of the contract's vocabulary: a type and the flat fields
// of its JSON object, without the fields the host stamps (seq, ts, run_id,
// run_label, runtime_id). Fields must marshal to a JSON object.
type Event struct {
	Type   EventType
	Fields map[string]any
}

// EventType is an event's "type" (docs/events.md#backend-events). It is a defined type so
// that event names are spelled with the constants below; it marshals to
// JSON as the plain string it holds. A backend's own event types (prefixed
// with its name, docs/events.md#backend-events) are EventType("<backend>.<what>").
type EventType string

// String returns the event type as the event log spells it.
func (t EventType) String() string { return string(t) }

// NewEvent builds an event; fields may be nil.
func NewEvent(typ EventType, fields map[string]any) Event {
	if fields == nil {
		fields = map[string]any{}
	}
	return Event{Type: typ, Fields: fields}
}

// Canonical event types a backend may emit (docs/events.md#backend-events), and the escape
// hatch for native frames without a mapping.
const (
	EventMessageChunk     EventType = "agent.message_chunk"
	EventThoughtChunk     EventType = "agent.thought_chunk"
	EventUserMessageChunk EventType = "user.message_chunk"
	EventToolCall         EventType = "tool.call"
	EventToolCallUpdate   EventType = "tool.call_update"
	EventPlan             EventType = "session.plan"
	EventWarning          EventType = "avenor.warning"
	// EventNative carries a native frame the plugin does not map:
	// native_type is the method or update kind, payload the raw object.
	EventNative EventType = "avenor.native"
	// EventError is a failure the user should see (source says whose).
	EventError EventType = "avenor.error"
	// EventAgentStatus is the runtime's phase (working, waiting, idle…).
	EventAgentStatus EventType = "agent.status"
)

// EventUsageAccount is the account's usage of one rate-limit window, as
// the runtime reports it (UsageAccount). The host writes it only in runs
// that asked (--report-usage, --wait-on-rate-limit) and drops it in the
// others, whose stream stays as it was.
const EventUsageAccount EventType = "avenor.usage.account"

// UsageAccount is an avenor.usage.account event: window names the
// rate-limit window as the runtime does ("5h", "7d", "primary"…), usedPct
// is how much of it is used (0–100; negative: not said), resetsAt when it
// resets (zero: not said).
func UsageAccount(sessionID, window string, usedPct float64, resetsAt time.Time) Event {
	f := map[string]any{"session_id": sessionID, "window": window}
	if usedPct >= 0 {
		f["used_pct"] = usedPct
	}
	if !resetsAt.IsZero() {
		f["resets_at"] = resetsAt.UTC().Format(time.RFC3339)
	}
	return NewEvent(EventUsageAccount, f)
}

// EventSupervisorReattached is written by the host, as the first event of
// a session a supervisor took over from a plugin that outlived the previous
// one (avenor stable after a restart): buffered events and gap_ms follow.
const EventSupervisorReattached EventType = "avenor.supervisor.reattached"

// Event types the host writes around what backends emit (docs/events.md#backend-events):
// a backend never emits these, but every part of avenor names them here.
const (
	EventSessionStart       EventType = "session.start"
	EventSessionEnd         EventType = "session.end"
	EventTurnStart          EventType = "avenor.turn.start"
	EventRetry              EventType = "avenor.retry"
	EventPermissionRequest  EventType = "permission.request"
	EventPermissionResponse EventType = "permission.response"
	EventSubscriberLagged   EventType = "subscriber.lagged"
	EventLoopStart          EventType = "avenor.loop.start"
	EventLoopEnd            EventType = "avenor.loop.end"
	EventPhaseStart         EventType = "avenor.phase.start"
	EventPhaseEnd           EventType = "avenor.phase.end"
	EventTeamStart          EventType = "avenor.team.start"
	EventTeamEnd            EventType = "avenor.team.end"
	EventChildQuestion      EventType = "child.question"
	EventQuestionRequest    EventType = "question.request"
	EventQuestionResponse   EventType = "question.response"
)

// MessageChunk is the canonical agent.message_chunk with ACP's content shape.
func MessageChunk(sessionID, text string) Event {
	return chunk(EventMessageChunk, "agent_message_chunk", sessionID, text)
}

// ThoughtChunk is the canonical agent.thought_chunk.
func ThoughtChunk(sessionID, text string) Event {
	return chunk(EventThoughtChunk, "agent_thought_chunk", sessionID, text)
}

func chunk(typ EventType, update, sessionID, text string) Event {
	f := map[string]any{
		"content":        map[string]any{"type": "text", "text": text},
		"session_update": update,
	}
	if sessionID != "" {
		f["session_id"] = sessionID
	}
	return Event{Type: typ, Fields: f}
}
