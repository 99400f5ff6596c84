package jsonenc

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxDirectDepth is how deep Encoder nests before it hands a value to
// json.Marshal. encoding/json starts cycle detection at depth 1000; past
// this depth its own traversal reports a cycle with its own error, and a
// deep but acyclic value still encodes to the same bytes.
const maxDirectDepth = 500

// Encoder appends the JSON encoding of values, byte for byte what
// json.Marshal writes for them. Its scratch is reused between calls, so it
// is not safe for concurrent use; the zero value is ready.
type Encoder struct {
	// kvs is a stack: each map being encoded owns a tail of it, and order
	// the same tail, as indexes into kvs sorted by key. Sorting indexes
	// rather than the pairs moves no pointers, so it costs no GC write
	// barriers.
	kvs   []keyValue
	order []int32
}

type keyValue struct {
	key string
	val any
}

// AppendObject appends m's encoding to dst. On error the caller discards
// what was appended. It fails where json.Marshal fails (NaN, ±Inf, a
// cycle, an unsupported type), with an error of the same type.
func (e *Encoder) AppendObject(dst []byte, m map[string]any) ([]byte, error) {
	return e.appendObject(dst, m, 0)
}

// AppendValue appends v's encoding to dst, as AppendObject.
func (e *Encoder) AppendValue(dst []byte, v any) ([]byte, error) {
	return e.appendValue(dst, v, 0)
}

func (e *Encoder) appendObject(dst []byte, m map[string]any, depth int) ([]byte, error) {
	if m == nil {
		return append(dst, "null"...), nil
	}
	base := len(e.kvs)
	for k, v := range m {
		e.order = append(e.order, int32(len(e.kvs)))
		e.kvs = append(e.kvs, keyValue{k, v})
	}
	// Nested maps push past this map's entries, so order stays valid even
	// when the stacks grow into new arrays; index through e.kvs afresh.
	order := e.order[base:]
	kvs := e.kvs
	if len(order) <= 12 {
		// Insertion sort: events have a dozen keys or fewer.
		for i := 1; i < len(order); i++ {
			for j := i; j > 0 && kvs[order[j]].key < kvs[order[j-1]].key; j-- {
				order[j], order[j-1] = order[j-1], order[j]
			}
		}
	} else {
		slices.SortFunc(order, func(a, b int32) int { return strings.Compare(kvs[a].key, kvs[b].key) })
	}
	dst = append(dst, '{')
	var err error
	for i, at := range order {
		if i > 0 {
			dst = append(dst, ',')
		}
		kv := e.kvs[at]
		dst = appendString(dst, kv.key)
		dst = append(dst, ':')
		if dst, err = e.appendValue(dst, kv.val, depth+1); err != nil {
			break
		}
	}
	// Drop the references so the scratch does not keep events alive.
	clear(e.kvs[base:])
	e.kvs = e.kvs[:base]
	e.order = e.order[:base]
	if err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

func (e *Encoder) appendValue(dst []byte, v any, depth int) ([]byte, error) {
	if depth > maxDirectDepth {
		return appendMarshal(dst, v)
	}
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return appendString(dst, v), nil
	case float64:
		return appendFloat(dst, v, 64)
	case bool:
		return strconv.AppendBool(dst, v), nil
	case map[string]any:
		return e.appendObject(dst, v, depth)
	case []any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		var err error
		for i, x := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = e.appendValue(dst, x, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int16:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int8:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case uint:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint64:
		return strconv.AppendUint(dst, v, 10), nil
	case uint32:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint16:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint8:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case float32:
		return appendFloat(dst, float64(v), 32)
	case []string:
		if v == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, s := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, s)
		}
		return append(dst, ']'), nil
	case map[string]string:
		if v == nil {
			return append(dst, "null"...), nil
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			dst = appendString(dst, v[k])
		}
		return append(dst, '}'), nil
	default:
		return appendMarshal(dst, v)
	}
}

// appendMarshal is the fallback for every other type (structs, pointers,
// named types, json.Marshaler, json.Number…): json.Marshal escapes HTML
// and compacts a Marshaler's output exactly as the Encoder does for a
// nested value.
func appendMarshal(dst []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// appendFloat writes f as encoding/json does: ES6 number form, an exponent
// only below 1e-6 or from 1e21 on, and no leading zero in a negative
// exponent. NaN and ±Inf are not JSON and fail as they do there.
func appendFloat(dst []byte, f float64, bits int) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, &json.UnsupportedValueError{Value: reflect.ValueOf(f), Str: strconv.FormatFloat(f, 'g', -1, bits)}
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		// 1e-07 → 1e-7
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

const hexDigits = "0123456789abcdef"

// appendString writes s quoted as encoding/json does with HTML escaping on.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if htmlSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				// Other control bytes, and <, > and &.
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// htmlSafe: the ASCII bytes written as they are (encoding/json's
// htmlSafeSet): 0x20 to 0x7f except ", \, <, > and &.
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		switch b {
		case '"', '\\', '<', '>', '&':
		default:
			t[b] = true
		}
	}
	return t
}()

// AppendString appends s as a JSON string, byte for byte what json.Marshal
// writes for it: <, > and & escaped, invalid UTF-8 as \ufffd. Code that
// splices an encoded object (a plugin's event fields, the host's stamped
// line) quotes its strings with it to keep the exact bytes.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s) }

// Hex4 reads the four hex digits of a \u escape (either case) at the start
// of b: the one decoding rule the host's scanner and the plugin's decoder
// share.
func Hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	return r, true
}

// Unescape returns the byte a one-letter escape \c stands for (\" \\ \/
// \b \f \n \r \t); false for any other c, \u among them. With Hex4 it is
// the decoding the host's scanner and the plugin's decoder share.
func Unescape(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}
