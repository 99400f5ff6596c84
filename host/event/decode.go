package event

import (
	"errors"
	"strconv"
)

// A line the Writer spliced (WriteFields) is canonical by construction:
// compact, keys without escapes, strings and numbers in the encoder's own
// form. Decoding it for a reader that wants a map (a subscriber, OnEvent)
// therefore needs no validation and no reflection: decodeCanonical gives
// what json.Unmarshal gives for it — map[string]any, []any, string,
// float64, bool, nil — at a fraction of the cost. FuzzWriteFields compares
// the two through Stamped.Event and the subscribers' events.

var errNotCanonical = errors.New("event: line is not in canonical form")

// decodeCanonical decodes a canonical JSON object.
func decodeCanonical(b []byte) (Event, error) {
	d := canonDecoder{b: b}
	if len(b) == 0 || b[0] != '{' {
		return nil, errNotCanonical
	}
	m, ok := d.object()
	if !ok || d.i != len(b) {
		return nil, errNotCanonical
	}
	return m, nil
}

type canonDecoder struct {
	b       []byte
	i       int
	scratch []byte
}

func (d *canonDecoder) object() (map[string]any, bool) {
	d.i++ // {
	m := make(map[string]any, 8)
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return m, true
	}
	for d.i < len(d.b) && d.b[d.i] == '"' {
		end := skipString(d.b, d.i)
		k := internKey(d.b[d.i+1 : end-1])
		d.i = end + 1 // past ':'
		v, ok := d.value()
		if !ok {
			return nil, false
		}
		m[k] = v
		if d.i >= len(d.b) {
			return nil, false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return m, true
		default:
			return nil, false
		}
	}
	return nil, false
}

func (d *canonDecoder) value() (any, bool) {
	if d.i >= len(d.b) {
		return nil, false
	}
	switch c := d.b[d.i]; {
	case c == '"':
		end := skipString(d.b, d.i)
		var s []byte
		var ok bool
		s, d.scratch, ok = unquote(d.scratch, d.b[d.i:end])
		d.i = end
		return string(s), ok
	case c == '{':
		return d.object()
	case c == '[':
		d.i++
		a := []any{}
		if d.i < len(d.b) && d.b[d.i] == ']' {
			d.i++
			return a, true
		}
		for {
			v, ok := d.value()
			if !ok || d.i >= len(d.b) {
				return nil, false
			}
			a = append(a, v)
			switch d.b[d.i] {
			case ',':
				d.i++
			case ']':
				d.i++
				return a, true
			default:
				return nil, false
			}
		}
	case c == 't':
		d.i += 4
		return true, true
	case c == 'f':
		d.i += 5
		return false, true
	case c == 'n':
		d.i += 4
		return nil, true
	}
	end := skipValue(d.b, d.i)
	f, err := strconv.ParseFloat(string(d.b[d.i:end]), 64)
	d.i = end
	return f, err == nil
}

// internKey returns the key as a string, without allocating for the keys
// every event repeats.
func internKey(b []byte) string {
	switch string(b) {
	case KeyEvent:
		return KeyEvent
	case KeySeq:
		return KeySeq
	case KeyTS:
		return KeyTS
	case KeyRunID:
		return KeyRunID
	case KeyRunLabel:
		return KeyRunLabel
	case KeyRuntimeID:
		return KeyRuntimeID
	case KeySessionID:
		return KeySessionID
	case "content":
		return "content"
	case "text":
		return "text"
	case "type":
		return "type"
	case "session_update":
		return "session_update"
	case "delta":
		return "delta"
	case "messageId":
		return "messageId"
	case "toolCallId":
		return "toolCallId"
	case "title":
		return "title"
	case "kind":
		return "kind"
	case "status":
		return "status"
	}
	return string(b)
}
