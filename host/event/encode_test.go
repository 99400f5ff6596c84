package event

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// oracleLine is the encoder the contract names (docs/events.md#the-envelope) and the Writer used
// before lineEncoder: json.Encoder.Encode with its defaults.
func oracleLine(ev Event) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(ev); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// assertSameLine fails unless lineEncoder and the oracle agree: the same
// bytes, or both an error.
func assertSameLine(t *testing.T, name string, ev Event) {
	t.Helper()
	want, werr := oracleLine(ev)
	var e lineEncoder
	got, gerr := e.appendLine(nil, ev)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%s: oracle error %v, lineEncoder error %v", name, werr, gerr)
	}
	if werr != nil {
		return
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s:\n got: %s\nwant: %s", name, got, want)
	}
}

// The line encoder is jsonenc plus a newline; sdk/jsonenc's own tests hold
// the full corpus of types. Here: the host's Event type, nested too, the
// stamped fields and the error paths, against the old encoder.
func TestLineEncoderMatchesEncodingJSON(t *testing.T) {
	var decoded map[string]any
	if err := json.Unmarshal([]byte(`{"event":"avenor.native","payload":{"n":1,"big":1e21,"f":100.0,"neg":-0.5,"arr":[1,"two",null,true,{"z":{},"a":[]}]},"s":"\u00e9\u2028\ud83d\udc34"}`), &decoded); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		ev   Event
	}{
		{"empty", Event{}},
		{"nil event", nil},
		{"sorted keys", Event{"z": 1, "a": 2, "m": 3, "A": 4, "_": 5, "é": 6, "": 7}},
		{"stamped fields", Event{"event": "session.end", "seq": int64(7), "ts": int64(1700000000000), "run_id": "r<1>", "session_id": "s&"}},
		{"null fields", Event{"n": nil, "m": map[string]any(nil), "ev": Event(nil)}},
		{"nested events", Event{"a": map[string]any{"z": []any{1, "two", nil, true, map[string]any{"y": 1, "b": Event{"q": "<"}}}, "a": []any{}}, "b": Event{}}},
		{"decoded payload", Event(decoded)},
		{"large string", Event{"s": strings.Repeat("abc<def>\u2028é\xff", 10000)}},
		{"NaN", Event{"event": "x", "v": math.NaN()}},
		{"unsupported", Event{"ch": make(chan int)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assertSameLine(t, tt.name, tt.ev) })
	}
}

// FuzzLineEncoder: for any JSON object as a plugin would send it, decoded
// as the host decodes it, and for any string, key and number, lineEncoder
// writes the oracle's bytes.
func FuzzLineEncoder(f *testing.F) {
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
			assertSameLine(t, "payload", Event(m))
			if m != nil {
				m["event"], m["seq"], m["ts"] = s, int64(len(payload)), x
				assertSameLine(t, "payload stamped", Event(m))
			}
		}
		assertSameLine(t, "values", Event{s: s, "k" + s: []any{x, float32(x), s}, "i": int64(x) * 3})
	})
}

func BenchmarkLineEncoder(b *testing.B) {
	ev := benchEvent()
	ev["seq"], ev["ts"], ev["run_id"] = int64(123456), int64(1700000000000), "a1b2c3d4e5f60718"
	b.Run("lineEncoder", func(b *testing.B) {
		var e lineEncoder
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = e.appendLine(buf[:0], ev)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			_ = enc.Encode(ev)
		}
	})
}
