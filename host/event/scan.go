package event

import (
	"bytes"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/avenor-go/avenor/sdk/jsonenc"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// A plugin sends every event as its type and the JSON object of its fields
// (the plugin protocol, sdk/plugin). Decoding that object into a map only to stamp it and
// encode it again was most of the host's cost per event under a flood
// (to keep the event path near the disk's speed). The host reads only a few of the fields (session_id, the
// chunk text, a title), so Fields scans the object instead: it checks that
// the bytes are already canonical — exactly what the line encoder would
// write for their decoding: no whitespace, keys sorted and unique, strings
// and numbers in encoding/json's own form — and locates the top-level
// members. WriteFields then splices the stamped members in, and the line
// is byte for byte the one Write would have written for the decoded map.
// Bytes that are not canonical (another encoder's spacing or escapes, an
// integer past 2^53…) are decoded as before: ScanFields says so, and the
// caller decodes. FuzzWriteFields holds the two paths to the same bytes.

// maxScanDepth bounds the nesting the scanner follows; deeper objects take
// the decoding path, whose own bounds apply.
const maxScanDepth = 64

// Fields is one plugin event scanned, not decoded. It is taken from a pool
// by ScanFields and given back with Release; it is not safe for concurrent
// use. The data it was scanned from must not change until Release.
type Fields struct {
	typ     sdk.EventType
	data    []byte
	members []member // top level, in key order
	scratch []byte   // unescaped strings (Str)
	enc     jsonenc.Encoder
}

// member locates one top-level member in Fields.data: offsets, not
// slices, so recording one stores no pointer (no GC write barrier).
type member struct {
	kStart, kEnd int32 // the key's bytes: canonical keys here hold no escapes
	vStart, vEnd int32 // the value's encoding
}

func (f *Fields) key(m member) []byte { return f.data[m.kStart:m.kEnd] }
func (f *Fields) val(m member) []byte { return f.data[m.vStart:m.vEnd] }

var fieldsPool = sync.Pool{New: func() any { return new(Fields) }}

// ScanFields scans data, the JSON object of an event's fields of type typ
// as a plugin sent it (empty means no fields). It returns false, and no
// Fields, when data is not in canonical form: the caller then decodes it
// (and reports it malformed when it does not decode) as before.
func ScanFields(typ sdk.EventType, data []byte) (*Fields, bool) {
	f := fieldsPool.Get().(*Fields)
	f.typ, f.data, f.members = typ, data, f.members[:0]
	if len(data) == 0 {
		return f, true
	}
	end, ok := f.object(data, 0, 0, true)
	if !ok || end != len(data) {
		f.Release()
		return nil, false
	}
	return f, true
}

// Release gives f back to the pool; f must not be used afterwards.
func (f *Fields) Release() {
	f.data = nil
	f.members = f.members[:0]
	if cap(f.scratch) > 64<<10 {
		f.scratch = nil
	}
	fieldsPool.Put(f)
}

// Type returns the event's type.
func (f *Fields) Type() sdk.EventType { return f.typ }

// value returns the encoding of the top-level member key, or nil.
func (f *Fields) value(key string) []byte {
	for _, m := range f.members {
		if string(f.key(m)) == key {
			return f.val(m)
		}
	}
	return nil
}

// Str returns the top-level member key decoded, when it is a string. The
// bytes are f's until the next Str or Release: copy what is kept.
func (f *Fields) Str(key string) ([]byte, bool) {
	return f.unquote(f.value(key))
}

// ContentText returns content.text decoded, when content is an object
// whose text is a string; the bytes are f's, as for Str.
func (f *Fields) ContentText() ([]byte, bool) {
	v := f.value("content")
	if len(v) < 2 || v[0] != '{' {
		return nil, false
	}
	// v is canonical: walk its members without checking again.
	i := 1
	for i < len(v) && v[i] == '"' {
		kEnd := skipString(v, i)
		key := v[i+1 : kEnd-1]
		vEnd := skipValue(v, kEnd+1)
		if string(key) == "text" {
			return f.unquote(v[kEnd+1 : vEnd])
		}
		i = vEnd
		if i < len(v) && v[i] == ',' {
			i++
		}
	}
	return nil, false
}

// unquote decodes a canonical string value; false when v is not a string.
func (f *Fields) unquote(v []byte) ([]byte, bool) {
	out, scratch, ok := unquote(f.scratch, v)
	f.scratch = scratch
	return out, ok
}

// unquote decodes the canonical string v, unescaping into scratch when it
// must; it returns the string's bytes and the scratch to keep.
func unquote(scratch, v []byte) (out, keep []byte, ok bool) {
	if len(v) < 2 || v[0] != '"' {
		return nil, scratch, false
	}
	s := v[1 : len(v)-1]
	if bytes.IndexByte(s, '\\') < 0 {
		return s, scratch, true
	}
	out = scratch[:0]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if u, ok := jsonenc.Unescape(s[i]); ok {
			out = append(out, u)
			continue
		}
		r, _ := jsonenc.Hex4(s[i+1:]) // canonical: the only other escape is \u
		out = utf8.AppendRune(out, r)
		i += 4
	}
	return out, out, true
}

// object checks the canonical object at b[i] ('{' expected) and returns
// the index after it; top records its members.
func (f *Fields) object(b []byte, i, depth int, top bool) (int, bool) {
	if depth > maxScanDepth || i >= len(b) || b[i] != '{' {
		return 0, false
	}
	i++
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	var prev []byte
	for n := 0; ; n++ {
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		kEnd, plain, ok := scanString(b, i)
		if !ok || !plain {
			// A key with escapes would need decoding to be ordered;
			// rare enough to leave to the decoding path.
			return 0, false
		}
		key := b[i+1 : kEnd-1]
		if n > 0 && bytes.Compare(prev, key) >= 0 {
			return 0, false // unsorted, or a duplicate (the decoder keeps the last)
		}
		prev = key
		if kEnd >= len(b) || b[kEnd] != ':' {
			return 0, false
		}
		vStart := kEnd + 1
		vEnd, ok := f.value1(b, vStart, depth+1)
		if !ok {
			return 0, false
		}
		if top {
			f.members = append(f.members, member{int32(i + 1), int32(kEnd - 1), int32(vStart), int32(vEnd)})
		}
		i = vEnd
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// value1 checks the canonical value at b[i] and returns the index after it.
func (f *Fields) value1(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		end, _, ok := scanString(b, i)
		return end, ok
	case c == '{':
		return f.object(b, i, depth, false)
	case c == '[':
		if depth > maxScanDepth {
			return 0, false
		}
		i++
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			end, ok := f.value1(b, i, depth+1)
			if !ok || end >= len(b) {
				return 0, false
			}
			switch b[end] {
			case ',':
				i = end + 1
			case ']':
				return end + 1, true
			default:
				return 0, false
			}
		}
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return f.number(b, i)
	}
	return 0, false
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// number checks that the number at b[i] is written as the encoder writes
// the float64 it decodes to.
func (f *Fields) number(b []byte, i int) (int, bool) {
	start := i
	if b[i] == '-' {
		i++
	}
	digits := i
	i, integer, ok := jsonenc.ScanNumber(b, start)
	if !ok {
		return 0, false
	}
	if integer && i-digits <= 15 {
		// Exact in a float64, and written back digit for digit.
		return i, true
	}
	v, err := strconv.ParseFloat(string(b[start:i]), 64)
	if err != nil {
		return 0, false // out of range: the decoder's error, on its path
	}
	var buf [32]byte
	enc, err := f.enc.AppendValue(buf[:0], v)
	if err != nil || !bytes.Equal(enc, b[start:i]) {
		return 0, false
	}
	return i, true
}

// scanString checks the canonical string at b[i] ('"') and returns the
// index after it; plain reports that it holds no escape. Canonical is
// what the encoder writes for the decoded string: HTML-safe ASCII and
// valid UTF-8 as they are, and exactly its escapes for the rest.
func scanString(b []byte, i int) (end int, plain, ok bool) {
	plain = true
	for i++; i < len(b); {
		c := b[i]
		if plainByte[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			return i + 1, plain, true
		case c == '\\':
			plain = false
			if i+1 >= len(b) {
				return 0, false, false
			}
			switch b[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !lowerHex(b[i+2:i+6]) {
					return 0, false, false
				}
				r, _ := jsonenc.Hex4(b[i+2:])
				if !escapedRune(r) {
					return 0, false, false
				}
				i += 6
			default:
				return 0, false, false
			}
		case c < utf8.RuneSelf:
			if c < ' ' || c == '<' || c == '>' || c == '&' {
				return 0, false, false
			}
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				return 0, false, false
			}
			i += size
		}
	}
	return 0, false, false
}

// plainByte: the ASCII bytes a canonical string holds as they are
// (encoding/json's HTML-safe set: 0x20 to 0x7f except ", \, <, > and &).
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		switch c {
		case '"', '\\', '<', '>', '&':
		default:
			t[c] = true
		}
	}
	return t
}()

// escapedRune reports whether the encoder writes r as \u00XX or \u202X:
// control bytes without a short escape, <, >, &, U+2028 and U+2029.
func escapedRune(r rune) bool {
	switch r {
	case '\b', '\f', '\n', '\r', '\t':
		return false
	case '<', '>', '&', '\u2028', '\u2029':
		return true
	}
	return r < ' '
}

func lowerHex(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// skipString returns the index after the (valid) string at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the (valid, compact) value at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
		i++
	}
	return i
}
