package loop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Any bytes either load as a valid loop config or fail with an error that
// starts "loop config: "; nothing panics and a loaded config keeps the
// promised bounds.
func FuzzLoadLoop(f *testing.F) {
	for _, seed := range []string{
		`{"max_iterations":3,"pre":[{"name":"a","prompt":"x {{.Iteration}}"}],"loop":[{"name":"b","prompt":"y","resume_from_previous":true}]}`,
		`{"loop":[{"name":"a","prompt":"x","requires":{"files":["f"]},"on_incomplete":{"max_nudges":2}}],"post":[{"name":"z","prompt":"q"}]}`,
		`{"pre":[{"name":"a","loop_file":"main.json"}]}`,
		`{"pre":[{"name":"a","prompt_file":"p.md"}]}`,
		`{}`, `[]`, `null`, `{"max_iterations":1e9}`, `{"loop":[{"name":"(initial)","prompt":"x"}]}`,
		`{"pre":[{"name":"a","prompt":"{{template \"a\"}}"}]}`,
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.md"), []byte("prompt {{.Phase}}"), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "main.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// prompt_file "p.md" resolves next to the config: give it one.
		os.WriteFile(filepath.Join(filepath.Dir(path), "p.md"), []byte("prompt {{.Phase}}"), 0o644)
		c, err := LoadLoop(path, LoadOptions{})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "loop config: ") {
				t.Fatalf("error without the prefix: %v", err)
			}
			return
		}
		if len(c.Pre)+len(c.Loop) == 0 || c.MaxIterations < 1 || c.MaxIterations > MaxIterationsLimit {
			t.Fatalf("loaded an invalid config: %+v", c)
		}
		for _, s := range [][]Phase{c.Pre, c.Loop, c.Post} {
			for _, p := range s {
				if p.Name == "" || p.Name == InitialPhase || (p.Prompt == "" && p.NestedLoop == nil && p.NestedTeam == nil) {
					t.Fatalf("loaded an invalid phase: %+v", p)
				}
			}
		}
	})
}

// The scanner never panics, and cutting the same text into other chunks
// never changes what it finds.
func FuzzScanner(f *testing.F) {
	for _, seed := range []string{
		"[loop: exit | a]\n", "```\n[loop: abort]\n```\n[loop: continue]", "> <|workflow: abort | q|>\n<|team: skip | x|>",
		"~~~~\n~~~\n[loop: exit]\n~~~~\n[loop: abort]", "\r\n[LOOP: EXIT]\r\n", "`[loop: exit]`",
	} {
		f.Add(seed, uint8(3))
	}
	f.Fuzz(func(t *testing.T, text string, size uint8) {
		var whole Scanner
		whole.Feed("message", text)
		want, wantSkips := whole.Result()
		n := int(size)%16 + 1
		var parts Scanner
		for i := 0; i < len(text); i += n {
			parts.Observe(msg(text[i:min(i+n, len(text))]))
		}
		got, skips := parts.Result()
		if got != want || strings.Join(skips, "\x00") != strings.Join(wantSkips, "\x00") {
			t.Fatalf("chunks of %d found %+v %q; whole text %+v %q", n, got, skips, want, wantSkips)
		}
		if got.Directive == None && got.Label != "" {
			t.Fatalf("a label without a marker: %+v", got)
		}
		if got.Label != strings.TrimSpace(got.Label) {
			t.Fatalf("label not trimmed: %q", got.Label)
		}
	})
}
