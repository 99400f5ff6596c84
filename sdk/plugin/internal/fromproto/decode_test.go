package fromproto

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// assertSameDecode fails unless ObjectDecoder and json.Unmarshal agree: the
// same value, or both an error. The decoder is reused, as the receive loop
// reuses it, so the key cache is exercised too.
func assertSameDecode(t *testing.T, d *ObjectDecoder, data []byte) {
	t.Helper()
	var want map[string]any
	werr := json.Unmarshal(data, &want)
	got, gerr := d.Decode(data)
	if len(data) == 0 {
		// unmarshalObject's rule, kept: empty input is no fields.
		if got != nil || gerr != nil {
			t.Fatalf("empty input: %v, %v; want nil, nil", got, gerr)
		}
		return
	}
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%q: json.Unmarshal error %v, ObjectDecoder error %v", data, werr, gerr)
	}
	if werr != nil {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got: %#v\nwant: %#v", data, got, want)
	}
}

func TestObjectDecoderMatchesUnmarshal(t *testing.T) {
	tests := []struct{ name, in string }{
		{"empty input", ``},
		{"empty object", `{}`},
		{"whitespace", " \t\r\n{ \"a\" : 1 , \"b\" :[ 1 , 2 ] }\n "},
		{"chunk", `{"content":{"text":"Running the tests now; this may take a moment.","type":"text"},"messageId":"msg_42","session_id":"ses_1","session_update":"agent_message_chunk"}`},
		{"types", `{"s":"x","f":1.5,"i":-42,"z":0,"e":1e21,"E":-2.5E-7,"t":true,"F":false,"n":null,"a":[],"o":{},"na":[[[]]],"mix":[1,"2",null,{"k":[true]}]}`},
		{"escapes", `{"s":"\"\\\/\b\f\n\r\t\u0041\u00e9\u2028\uFFFF","k\n\u0000":1}`},
		{"html kept", `{"s":"<a>&amp;</a>","\u003c":">"}`},
		{"unicode", `{"s":"é 🐴 日本語","é":"ü"}`},
		{"invalid utf-8", "{\"s\":\"a\xffb\xc3(c\xed\xa0\x80d\xf0\x9f\x90\",\"\xfe\":\"\xff\"}"},
		{"surrogate pair", `{"s":"\ud83d\udc34"}`},
		{"lone surrogate", `{"s":"\ud800x","t":"\udc00","u":"\ud800\u0041"}`},
		{"duplicate keys", `{"a":1,"a":{"b":2},"a":"last"}`},
		{"big numbers", `{"a":123456789012345678901234567890,"b":9007199254740993,"c":1e308,"d":5e-324,"e":1e-400}`},
		{"number out of range", `{"a":1e400}`},
		{"negative zero", `{"a":-0,"b":-0.0}`},
		{"null top level", `null`},
		{"array top level", `[1]`},
		{"string top level", `"x"`},
		{"trailing garbage", `{"a":1}x`},
		{"two objects", `{"a":1}{"b":2}`},
		{"trailing comma", `{"a":1,}`},
		{"bad number", `{"a":01}`},
		{"bad number 2", `{"a":1.}`},
		{"bad number 3", `{"a":-}`},
		{"bad number 4", `{"a":1e}`},
		{"plus number", `{"a":+1}`},
		{"bad escape", `{"a":"\x"}`},
		{"single quote escape", `{"a":"\'"}`},
		{"raw control char", "{\"a\":\"\x01\"}"},
		{"raw newline", "{\"a\":\"\n\"}"},
		{"unterminated", `{"a":"b`},
		{"unterminated object", `{"a":1`},
		{"bad literal", `{"a":tru}`},
		{"bad key", `{a:1}`},
		{"missing colon", `{"a" 1}`},
		{"short u escape", `{"a":"\u12"}`},
		{"deep", strings.Repeat(`{"a":[`, 1200) + strings.Repeat(`]}`, 1200)},
		{"too deep for encoding/json", strings.Repeat(`[`, 10001)},
		{"too deep object", `{"a":` + strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001) + `}`},
	}
	var d ObjectDecoder
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assertSameDecode(t, &d, []byte(tt.in)) })
	}
}

// The key cache hands out the same keys, stays bounded, and never caches
// a value string.
func TestObjectDecoderKeyCache(t *testing.T) {
	var d ObjectDecoder
	for i := range 2 * maxInterned {
		if _, err := d.Decode([]byte(`{"k` + strings.Repeat("x", i%80) + `":"value","i":` + string(rune('0'+i%10)) + `}`)); err != nil {
			t.Fatal(err)
		}
	}
	if len(d.keys) > maxInterned {
		t.Fatalf("key cache holds %d keys, bound %d", len(d.keys), maxInterned)
	}
	for k := range d.keys {
		if len(k) > maxInternLen || k == "value" {
			t.Fatalf("key cache holds %q", k)
		}
	}
}

// FuzzObjectDecoder: for any bytes, ObjectDecoder gives what json.Unmarshal
// gives.
func FuzzObjectDecoder(f *testing.F) {
	for _, seed := range []string{
		`{"content":{"text":"a < b","type":"text"},"n":1.5e3,"l":[true,false,null]}`,
		`{"s":"\ud83d\udc34\ud800\u00e9\n","":{"":[]}}`,
		"{\"\xff\":\"\xc3(\"}",
		`{"a":1e400}`, `null`, ` {} `, `{"a":-0.0e-0}`,
	} {
		f.Add([]byte(seed))
	}
	var d ObjectDecoder
	f.Fuzz(func(t *testing.T, data []byte) { assertSameDecode(t, &d, data) })
}

func BenchmarkObjectDecoder(b *testing.B) {
	data := []byte(`{"content":{"text":"Running the tests now; this may take a moment.","type":"text"},"messageId":"msg_42","session_id":"ses_0123456789","session_update":"agent_message_chunk"}`)
	b.Run("ObjectDecoder", func(b *testing.B) {
		var d ObjectDecoder
		b.ReportAllocs()
		for b.Loop() {
			if _, err := d.Decode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
