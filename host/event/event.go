package event

import sdk "github.com/avenor-go/avenor/sdk/runtime"

// Event is one event of the stream: a flat JSON object whose "event" key
// names its type (docs/events.md#the-envelope). Values must marshal to JSON; values decoded
// from JSON are float64, string, bool, nil, []any and map[string]any. The
// vocabulary of sdk/runtime (an event type, a stop reason) goes in as
// string(...), so that a reader finds a string in a fresh event as it does
// in a decoded one.
//
// An event handed to or returned by a [Writer] is shared with the history
// ring and every subscriber: treat it as read-only.
type Event map[string]any

// Type returns the event's type, or "" when the "event" key is missing or
// not a string. The key holds a plain string (what decoding JSON gives);
// an sdk.EventType put there by Go code is read as well.
func (e Event) Type() sdk.EventType {
	switch t := e[KeyEvent].(type) {
	case string:
		return sdk.EventType(t)
	case sdk.EventType:
		return t
	}
	return ""
}

// Keys of the envelope (docs/events.md#the-envelope).
const (
	KeyEvent     = "event"
	KeySeq       = "seq"
	KeyTS        = "ts"
	KeyRunID     = "run_id"
	KeyRunLabel  = "run_label"
	KeyRuntimeID = "runtime_id"
	KeySessionID = "session_id"
)

// clone returns a shallow copy of e with room for the stamped fields.
func clone(e Event) Event {
	out := make(Event, len(e)+6)
	for k, v := range e {
		out[k] = v
	}
	return out
}
