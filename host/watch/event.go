package watch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Event is one decoded line of an event log: the flat JSON object of
// docs/events.md#the-envelope. Numbers are kept as json.Number, so an event re-encoded for
// `--format json --classify` keeps them digit for digit.
type Event map[string]any

// ParseLine decodes one log line (without its newline). Anything but exactly
// one JSON object, surrounded by nothing but white space, is [ErrMalformed].
// A line without an "event" field parses fine; [Event.Name] is then "".
func ParseLine(line []byte) (Event, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var ev Event
	if err := dec.Decode(&ev); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if ev == nil {
		return nil, fmt.Errorf("%w: null, not an object", ErrMalformed)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the object", ErrMalformed)
	}
	return ev, nil
}

// Name is the "event" field, or "" when it is missing or not a string.
func (e Event) Name() sdk.EventType {
	s, _ := e["event"].(string)
	return sdk.EventType(s)
}

// SessionID is the "session_id" field rendered as text, else the
// "sessionID" field some older writers used (the original accepted both), or
// "".
func (e Event) SessionID() string {
	if id := e.str("session_id"); id != "" {
		return id
	}
	return e.str("sessionID")
}

// str renders a scalar field as text: strings as they are, numbers as
// written in the log, booleans as true/false; objects, arrays, null and
// missing fields as "".
func (e Event) str(key string) string { return scalar(e[key]) }

func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

// chunkText is the text of a message, thought or user chunk: content.text
// (ACP), or "delta" / "text" for backends that send them instead (docs/events.md#backend-events).
func (e Event) chunkText() string {
	switch c := e["content"].(type) {
	case map[string]any:
		if t, ok := c["text"].(string); ok {
			return t
		}
	case string:
		return c
	}
	if d := e.str("delta"); d != "" {
		return d
	}
	return e.str("text")
}
