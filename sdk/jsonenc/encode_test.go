package jsonenc

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// Event is how the host holds an event: a named map type, which Encoder
// hands to json.Marshal when it is nested.
type Event map[string]any

// assertSame fails unless Encoder and json.Marshal agree: the same
// bytes, or both an error.
func assertSame(t *testing.T, name string, ev Event) {
	t.Helper()
	want, werr := json.Marshal(map[string]any(ev))
	var e Encoder
	got, gerr := e.AppendObject(nil, ev)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%s: json.Marshal error %v, Encoder error %v", name, werr, gerr)
	}
	if werr != nil {
		return
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s:\n got: %s\nwant: %s", name, got, want)
	}
	if len(e.kvs) != 0 || len(e.order) != 0 {
		t.Fatalf("%s: key scratch not unwound: %d entries left", name, len(e.kvs))
	}
}

type marshalerValue struct{ s string }

func (m marshalerValue) MarshalJSON() ([]byte, error) {
	return []byte(`{ "b" : "<` + m.s + `>" , "a":[1, 2] }`), nil
}

type namedString string

// The corpus: every type the encoder writes itself, and the fallbacks.
func TestEncoderMatchesEncodingJSON(t *testing.T) {
	var decoded map[string]any
	if err := json.Unmarshal([]byte(`{"event":"avenor.native","payload":{"n":1,"big":1e21,"f":100.0,"neg":-0.5,"arr":[1,"two",null,true,{"z":{},"a":[]}]},"s":"\u00e9\u2028\ud83d\udc34"}`), &decoded); err != nil {
		t.Fatal(err)
	}
	deep := map[string]any{"leaf": "x"}
	for range 2 * maxDirectDepth {
		deep = map[string]any{"d": deep, "s": "<&>"}
	}
	tests := []struct {
		name string
		ev   Event
	}{
		{"empty", Event{}},
		{"nil event", nil},
		{"sorted keys", Event{"z": 1, "a": 2, "m": 3, "A": 4, "_": 5, "é": 6, "": 7}},
		{"html and escapes", Event{"s": "<a href=\"x\">&</a>\\ \b\f\n\r\t\x00\x01\x1f\x7f"}},
		{"html in keys", Event{"<k>&": "v", "a\"b": 1, "\n": 2}},
		{"unicode", Event{"s": "é 🐴 \u2028 \u2029 日本語 \ufeff"}},
		{"invalid utf-8", Event{"s": "a\xffb\xc3(c\xed\xa0\x80d\xf0\x9f\x90", "\xfe": 1}},
		{"floats", Event{"a": 1.5, "b": 100.0, "c": 1e21, "d": 1e20, "e": 1e-7, "f": 1e-6, "g": math.Copysign(0, -1), "h": 0.0,
			"i": 123456789.123456789, "j": -1e-300, "k": math.MaxFloat64, "l": math.SmallestNonzeroFloat64, "m": 9007199254740993.0}},
		{"float32", Event{"a": float32(1.1), "b": float32(1e21), "c": float32(1e-7), "d": float32(3.4e38)}},
		{"ints", Event{"a": 42, "b": int64(math.MaxInt64), "c": int64(math.MinInt64), "d": int8(-8), "e": int16(-16), "f": int32(-32),
			"g": uint(7), "h": uint8(8), "i": uint16(16), "j": uint32(32), "k": uint64(math.MaxUint64)}},
		{"null fields", Event{"n": nil, "m": map[string]any(nil), "s": []any(nil), "ss": []string(nil), "ms": map[string]string(nil), "ev": Event(nil)}},
		{"bools", Event{"t": true, "f": false}},
		{"nested", Event{"a": map[string]any{"z": []any{1, "two", nil, true, map[string]any{"y": 1, "b": Event{"q": "<"}}}, "a": []any{}}, "b": map[string]any{}}},
		{"string slices and maps", Event{"a": []string{"<", "b"}, "b": []string{}, "c": map[string]string{"z": "<", "a": "&"}, "d": map[string]string{}}},
		{"decoded payload", Event(decoded)},
		{"fallbacks", Event{"raw": json.RawMessage(`{"b" : 1, "a":"<"}`), "num": json.Number("12.50"), "named": namedString("<x>"),
			"m": marshalerValue{"q"}, "ptr": &struct{ A string }{"<"}, "t": time.Unix(1700000000, 0).UTC(), "bytes": []byte("hi"),
			"intmap": map[int]string{2: "b", 10: "a"}, "arr": [2]int{1, 2}, "struct": struct {
				B int `json:"b"`
				A int `json:"a,omitempty"`
			}{B: 1}}},
		{"deep", Event{"deep": deep}},
		{"large string", Event{"s": strings.Repeat("abc<def>\u2028é\xff", 10000)}},
		{"NaN", Event{"event": "x", "v": math.NaN()}},
		{"Inf nested", Event{"event": "x", "v": []any{math.Inf(-1)}}},
		{"float32 NaN", Event{"v": float32(math.NaN())}},
		{"unsupported", Event{"ch": make(chan int)}},
		{"cycle", func() Event {
			m := map[string]any{}
			m["self"] = m
			return Event{"c": m}
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assertSame(t, tt.name, tt.ev) })
	}
}

// Every float64 exponent range and the float formatting cut-offs.
func TestEncoderFloatCutoffs(t *testing.T) {
	for exp := -320; exp <= 308; exp++ {
		for _, m := range []float64{1, 1.5, 9.999999, 2.2250738585072014} {
			f := m * math.Pow(10, float64(exp))
			assertSame(t, "float", Event{"f": f, "n": -f, "f32": float32(f)})
		}
	}
	for _, f := range []float64{1e-6, math.Nextafter(1e-6, 0), 1e21, math.Nextafter(1e21, 0), 5e-324} {
		assertSame(t, "cutoff", Event{"f": f, "n": -f, "f32": float32(f)})
	}
}

// FuzzEncoder: for any JSON object as a plugin would send it, decoded as
// the host decodes it, and for any string, key and number, Encoder writes
// json.Marshal's bytes.
func FuzzEncoder(f *testing.F) {
	for _, seed := range []string{
		`{"event":"agent.message_chunk","content":{"type":"text","text":"a < b && c > d"},"session_id":"s"}`,
		`{"a":[1,2.5,-0,1e400,null,true,{"b":"\u2028\ud800"}],"":{}}`,
		`{"n":123456789012345678901234567890,"m":1e-7,"é":"\u00e9"}`,
		`{"x":"\xff\xfe"}`,
	} {
		f.Add([]byte(seed), "s<&>\u2029", 1.5)
	}
	f.Fuzz(func(t *testing.T, payload []byte, s string, x float64) {
		var m map[string]any
		if json.Unmarshal(payload, &m) == nil {
			assertSame(t, "payload", Event(m))
			if m != nil {
				m["event"], m["seq"], m["ts"] = s, int64(len(payload)), x
				assertSame(t, "payload stamped", Event(m))
			}
		}
		assertSame(t, "values", Event{s: s, "k" + s: []any{x, float32(x), s}, "i": int64(x) * 3})
	})
}

func BenchmarkEncoder(b *testing.B) {
	ev := map[string]any{
		"event": "agent.message_chunk", "session_id": "ses_0123456789", "session_update": "agent_message_chunk",
		"messageId": "msg_42", "content": map[string]any{"type": "text", "text": "Running the tests now; this may take a moment."},
		"seq": int64(123456), "ts": int64(1700000000000), "run_id": "a1b2c3d4e5f60718",
	}
	b.Run("Encoder", func(b *testing.B) {
		var e Encoder
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = e.AppendObject(buf[:0], ev)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(ev)
		}
	})
}

func TestUnescape(t *testing.T) {
	for c := 0; c < 256; c++ {
		got, ok := Unescape(byte(c))
		var want string
		werr := json.Unmarshal([]byte(`"\`+string(rune(c))+`"`), &want)
		if c == 'u' {
			werr = errors.New("not a one-letter escape") // \u takes four hex digits
		}
		if ok != (werr == nil) {
			t.Fatalf("Unescape(%q): ok %v, encoding/json error %v", byte(c), ok, werr)
		}
		if ok && (len(want) != 1 || got != want[0]) {
			t.Fatalf("Unescape(%q) = %q, encoding/json says %q", byte(c), got, want)
		}
	}
}
