package occonfig

import (
	"encoding/json"
	"testing"
)

// FuzzStripJSONC: any input is survived, and valid JSON without trailing
// commas stays the same value.
func FuzzStripJSONC(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":"//x", /* c */ "b":[1,],}`, `"\"/*"`, `/* open`, "// only\n", `{"a":"\\"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out := StripJSONC(data)
		var in, got any
		if json.Unmarshal(data, &in) != nil {
			return
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("valid JSON %q became invalid %q: %v", data, out, err)
		}
		a, _ := json.Marshal(in)
		b, _ := json.Marshal(got)
		if string(a) != string(b) {
			t.Fatalf("%q changed to %q", a, b)
		}
	})
}

func FuzzFrontMatter(f *testing.F) {
	f.Add([]byte("---\nmodel: a/b\nmode: subagent\n---\nbody"))
	f.Add([]byte("---\n"))
	f.Fuzz(func(t *testing.T, data []byte) { _ = frontMatter(data) })
}
