package loop

import (
	"reflect"
	"strings"
	"testing"
)

func TestVerify(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"roster.json":     `{"fast": {"backend": "scripted", "model": "m"}, "deep": {"backend": "scripted", "agent": "a"}}`,
		"loop.json":       `{"max_iterations": 4, "pre": [{"name": "b", "prompt": "x", "roster_entry": "fast"}], "loop": [{"name": "t", "prompt": "y"}, {"name": "n", "team_file": "sub/team.json"}]}`,
		"sub/team.json":   `{"team": [{"name": "m", "prompt": "z"}, {"name": "l", "loop_file": "inner.json"}]}`,
		"sub/inner.json":  `{"loop": [{"name": "i", "prompt": "q"}], "post": [{"name": "o", "prompt": "r"}]}`,
		"bad.json":        `{"loop": [{"name": "a", "prompt": "x", "verify": 1}]}`,
		"outer.json":      `{"pre": [{"name": "a", "loop_file": "badinner.json"}, {"name": "c", "loop_file": "cycle.json"}]}`,
		"badinner.json":   `{"pre": [{"name": "x"}]}`,
		"cycle.json":      `{"pre": [{"name": "back", "loop_file": "outer.json"}]}`,
		"badroster.json":  `{"x": {"backend": "", "model": "m"}}`,
		"needroster.json": `{"pre": [{"name": "a", "prompt": "x", "roster_entry": "fast"}]}`,
	})
	for _, c := range []struct {
		name      string
		req       VerifyRequest
		oks, errs []string
	}{
		{"good, recursive", VerifyRequest{LoopFile: "loop.json", RosterFile: "roster.json", RosterEntry: "deep"},
			[]string{"roster roster.json (2 entries)", `roster roster.json: entry "deep" found`,
				"loop loop.json (3 phases, max_iterations=4)", "team sub/team.json (2 phases)", "loop sub/inner.json (2 phases, max_iterations=10)"}, nil},
		{"roster only, entry missing", VerifyRequest{RosterFile: "roster.json", RosterEntry: "nobody"},
			[]string{"roster roster.json (2 entries)"}, []string{`roster roster.json: entry "nobody": not found`}},
		{"bad roster", VerifyRequest{RosterFile: "badroster.json"}, nil,
			[]string{`roster badroster.json: entry "x": backend must not be empty`}},
		{"unknown field", VerifyRequest{LoopFile: "bad.json"}, nil, []string{`loop bad.json: loop config: unknown field "verify"`}},
		{"nested errors and cycles", VerifyRequest{LoopFile: "outer.json"},
			[]string{"loop outer.json (2 phases, max_iterations=10)", "loop cycle.json (1 phases, max_iterations=10)"},
			[]string{"loop badinner.json: loop config: phase[name x]: prompt must not be empty (set prompt or prompt_file)",
				"loop outer.json: the config includes itself (outer.json -> cycle.json -> outer.json)"}},
		{"roster fallback", VerifyRequest{LoopFile: "needroster.json"}, nil,
			[]string{`loop needroster.json: loop config: phase[name a]: roster_entry "fast" needs a roster (roster_file in the config, or --roster-file)`}},
		{"roster fallback given", VerifyRequest{LoopFile: "needroster.json", RosterFile: "roster.json"},
			[]string{"roster roster.json (2 entries)", "loop needroster.json (1 phases, max_iterations=10)"}, nil},
		{"missing file", VerifyRequest{TeamFile: "nope.json"}, nil, []string{"team nope.json: team config: open $DIR/nope.json: no such file or directory"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.req.Dir = dir
			oks, errs := Verify(c.req)
			for i := range errs {
				errs[i] = strings.ReplaceAll(errs[i], dir, "$DIR")
			}
			if !reflect.DeepEqual(oks, c.oks) || !reflect.DeepEqual(errs, c.errs) {
				t.Errorf("oks %q\nerrs %q\nwant oks %q\nerrs %q", oks, errs, c.oks, c.errs)
			}
		})
	}
}
