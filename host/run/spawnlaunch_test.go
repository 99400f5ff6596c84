package run

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestAllowedToolsParam(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
		set       bool
		err       string
	}{
		{``, "", false, ""},
		{`null`, "", false, ""},
		{`""`, "", true, ""},
		{`[]`, "", true, ""},
		{`["Read","Grep"]`, "Read,Grep", true, ""},
		{`"Read, Grep"`, "Read, Grep", true, ""},
		{`["Read,Grep"]`, "", false, `entry 1 "Read,Grep" holds a comma`},
		{`["Read",""]`, "", false, "entry 2 is empty"},
		{`"Read,,Grep"`, "", false, "entry 2 is empty"},
		{`7`, "", false, "want an array of tool names"},
		{`[1]`, "", false, "want an array of tool names"},
		{`{"a":1}`, "", false, "want an array of tool names"},
		{`["` + strings.Repeat("x", MaxToolName+1) + `"]`, "", false, "is not a tool name"},
		{`"` + strings.Repeat("a,", MaxAllowedTools) + `a"`, "", false, "over the limit"},
	} {
		got, set, err := AllowedToolsParam(json.RawMessage(tc.raw))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%.40s: error %v, want %q", tc.raw, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want || set != tc.set):
			t.Errorf("%.40s: (%q, %v, %v), want (%q, %v)", tc.raw, got, set, err, tc.want, tc.set)
		}
	}
}

// FuzzAllowedToolsParam: whatever it accepts reads back through
// --allowed-tools' parser to the same entries, never panics.
func FuzzAllowedToolsParam(f *testing.F) {
	for _, s := range []string{`""`, `[]`, `["Read","Grep"]`, `"a, b"`, `[","]`, `null`, `7`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		s, set, err := AllowedToolsParam(json.RawMessage(raw))
		if err != nil || !set {
			return
		}
		if _, err := allowedTools("allowed_tools", s); err != nil {
			t.Fatalf("%q accepted as %q, which --allowed-tools refuses: %v", raw, s, err)
		}
	})
}
