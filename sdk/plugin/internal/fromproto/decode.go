package fromproto

import (
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/avenor-go/avenor/sdk/jsonenc"
)

// Every event crosses the wire as a JSON object and is decoded back into a
// map on the host; under a flood json.Unmarshal into map[string]any was a
// quarter of the host's receive loop (measured 2026-11-29). ObjectDecoder decodes the
// JSON a plugin sends into exactly what json.Unmarshal would give —
// map[string]any, []any, string, float64, bool and nil — without
// reflection, and interns the short keys that every event repeats. Whatever
// it does not handle itself (invalid JSON, a number float64 cannot hold, a
// surrogate \u escape, nesting past maxFastDepth, a top level that is not an
// object) it hands to json.Unmarshal, so the result and the error are
// always json.Unmarshal's. FuzzObjectDecoder holds it to that.

// maxFastDepth bounds the nesting ObjectDecoder follows itself;
// encoding/json's own limit (10 000) then applies in the fallback.
const maxFastDepth = 1000

// Bounds of the key cache: keys up to maxInternLen bytes, at most
// maxInterned of them per decoder; past that keys are allocated as usual.
const (
	maxInternLen = 64
	maxInterned  = 1024
)

// ObjectDecoder is not safe for concurrent use: one belongs to one
// session's receive loop.
type ObjectDecoder struct {
	keys map[string]string
	data []byte
	pos  int
}

// Decode decodes a JSON object as json.Unmarshal into a map[string]any does;
// empty input is a nil map.
func (d *ObjectDecoder) Decode(data []byte) (map[string]any, error) {
	if len(data) == 0 {
		return nil, nil
	}
	if m, ok := d.fast(data); ok {
		return m, nil
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// fast reports false for anything it leaves to json.Unmarshal.
func (d *ObjectDecoder) fast(data []byte) (m map[string]any, ok bool) {
	d.data, d.pos = data, 0
	defer func() { d.data = nil }()
	d.space()
	if d.pos >= len(d.data) || d.data[d.pos] != '{' {
		return nil, false
	}
	m, ok = d.object(0)
	if !ok {
		return nil, false
	}
	d.space()
	return m, d.pos == len(d.data)
}

func (d *ObjectDecoder) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// object decodes from the '{' at pos.
func (d *ObjectDecoder) object(depth int) (map[string]any, bool) {
	if depth > maxFastDepth {
		return nil, false
	}
	d.pos++ // {
	// No size hint: a map made for 16 (room for the host's envelope
	// fields) measured slower than growing a small one.
	m := map[string]any{}
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return m, true
	}
	for {
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, false
		}
		k, ok := d.str(true)
		if !ok {
			return nil, false
		}
		d.space()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, false
		}
		d.pos++
		d.space()
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		m[k] = v
		more, ok := d.next('}')
		if !ok {
			return nil, false
		}
		if !more {
			return m, true
		}
	}
}

// next steps over what follows a member or an element: a comma (more:
// another follows) or closer (the object or array ends); anything else,
// or the end of the data, is not JSON the fast path takes.
func (d *ObjectDecoder) next(closer byte) (more, ok bool) {
	d.space()
	if d.pos >= len(d.data) {
		return false, false
	}
	switch d.data[d.pos] {
	case ',':
		d.pos++
		d.space()
		return true, true
	case closer:
		d.pos++
		return false, true
	}
	return false, false
}

func (d *ObjectDecoder) array(depth int) ([]any, bool) {
	if depth > maxFastDepth {
		return nil, false
	}
	d.pos++ // [
	a := []any{}
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return a, true
	}
	for {
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		more, ok := d.next(']')
		if !ok {
			return nil, false
		}
		if !more {
			return a, true
		}
	}
}

// value decodes the value at pos (whitespace already skipped).
func (d *ObjectDecoder) value(depth int) (any, bool) {
	if d.pos >= len(d.data) {
		return nil, false
	}
	switch c := d.data[d.pos]; {
	case c == '"':
		return d.str(false)
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return nil, false
}

func (d *ObjectDecoder) literal(lit string) bool {
	if len(d.data)-d.pos < len(lit) || string(d.data[d.pos:d.pos+len(lit)]) != lit {
		return false
	}
	d.pos += len(lit)
	return true
}

// number checks the JSON number grammar, then parses as json.Unmarshal
// does; a number out of float64's range is left to it (its error).
func (d *ObjectDecoder) number() (any, bool) {
	i, _, ok := jsonenc.ScanNumber(d.data, d.pos)
	if !ok {
		return nil, false
	}
	f, err := strconv.ParseFloat(string(d.data[d.pos:i]), 64)
	if err != nil {
		return nil, false
	}
	d.pos = i
	return f, true
}

// str decodes the string at pos ('"'), as encoding/json unquotes it:
// escapes resolved, invalid UTF-8 bytes each replaced by U+FFFD.
func (d *ObjectDecoder) str(key bool) (string, bool) {
	b := d.data
	start := d.pos + 1
	i := start
	// The common case: nothing to unescape or repair.
	for i < len(b) {
		c := b[i]
		if c == '"' {
			d.pos = i + 1
			return d.makeString(b[start:i], key), true
		}
		if c >= utf8.RuneSelf {
			if r, size := utf8.DecodeRune(b[i:]); r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			break // invalid UTF-8: repaired below
		}
		if c == '\\' || c < ' ' {
			break
		}
		i++
	}
	out := make([]byte, 0, i-start+16)
	out = append(out, b[start:i]...)
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return d.makeString(out, key), true
		case c < ' ':
			return "", false
		case c == '\\':
			if i+1 >= len(b) {
				return "", false
			}
			if u, ok := jsonenc.Unescape(b[i+1]); ok {
				out = append(out, u)
				i += 2
				continue
			}
			if b[i+1] != 'u' {
				return "", false
			}
			r, ok := jsonenc.Hex4(b[i+2:])
			if !ok || utf16.IsSurrogate(r) {
				return "", false // surrogates: json.Unmarshal's pairing rules
			}
			out = utf8.AppendRune(out, r)
			i += 6
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			out = utf8.AppendRune(out, r) // RuneError for an invalid byte
			i += size
		}
	}
	return "", false
}

// makeString returns b as a string; a short key comes from the cache.
func (d *ObjectDecoder) makeString(b []byte, key bool) string {
	if !key || len(b) > maxInternLen {
		return string(b)
	}
	if s, ok := d.keys[string(b)]; ok { // no allocation for the lookup
		return s
	}
	s := string(b)
	if d.keys == nil {
		d.keys = map[string]string{}
	}
	if len(d.keys) < maxInterned {
		d.keys[s] = s
	}
	return s
}
