package event

// Event is one event of the stream: a flat JSON object whose "event" key
// names its type (docs/events.md#the-envelope). Values must marshal to JSON; values decoded
// from JSON are float64, string, bool, nil, []any and map[string]any.
//
// An event handed to or returned by a [Writer] is shared with the history
// ring and every subscriber: treat it as read-only.
type Event map[string]any

// Type returns the event's type, or "" when the "event" key is missing or
// not a string.
func (e Event) Type() string {
	s, _ := e[KeyEvent].(string)
	return s
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
