package loop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Any bytes either load as a valid team config or fail with an error that
// starts "team config: "; a loaded config keeps the invariants validate
// promises (named, unique phases with a prompt or a nested config;
// conditional members only in the team section and only after a pre phase).
func FuzzLoadTeam(f *testing.F) {
	for _, seed := range []string{
		`{"pre":[{"name":"plan","prompt":"plan {{.Initial}}"}],"team":[{"name":"a","prompt":"x","conditional":true,"agent":"build"},{"name":"b","prompt":"y","model":"m"}],"post":[{"name":"sum","prompt":"z"}]}`,
		`{"team":[{"name":"a","prompt_file":"p.md"},{"name":"b","roster_entry":"fast","prompt":"q"}],"roster_file":"roster.json"}`,
		`{"team":[{"name":"a","team_file":"main.json"}]}`,
		`{"team":[{"name":"a","loop_file":"loop.json"}]}`,
		`{"team":[{"name":"a","prompt":"x","conditional":true}]}`,
		`{"pre":[{"name":"a","prompt":"x","conditional":true}]}`,
		`{"team":[{"name":"a","prompt":"x"},{"name":"a","prompt":"y"}]}`,
		`{"team":[{"name":"a","prompt":"x","roster_entry":"fast","agent":"b"}]}`,
		`{"team":[{"name":"a","prompt":"x","unknown":1}]}`,
		`{}`, `[]`, `null`, `{"team":null}`, "\xef\xbb\xbf{}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "main.json")
		writeFuzzFiles(t, dir, map[string]string{
			"main.json":   string(data),
			"p.md":        "prompt {{.Phase}}",
			"roster.json": `{"fast":{"backend":"echo","model":"m"}}`,
			"loop.json":   `{"loop":[{"name":"l","prompt":"go"}]}`,
		})
		c, err := LoadTeam(path, LoadOptions{})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "team config: ") {
				t.Fatalf("error without the prefix: %v", err)
			}
			return
		}
		if len(c.Pre)+len(c.Team) == 0 {
			t.Fatalf("loaded a team config without pre or team phases: %+v", c)
		}
		seen := map[string]bool{}
		for k, s := range [][]Phase{c.Pre, c.Team, c.Post} {
			for _, p := range s {
				if p.Name == "" || p.Name == InitialPhase || seen[p.Name] {
					t.Fatalf("loaded an empty, reserved or duplicate phase name: %+v", p)
				}
				seen[p.Name] = true
				if p.Prompt == "" && p.NestedLoop == nil && p.NestedTeam == nil {
					t.Fatalf("loaded a phase with nothing to run: %+v", p)
				}
				if p.Conditional && (k != 1 || len(c.Pre) == 0) {
					t.Fatalf("loaded a conditional phase outside the team section or without a pre phase: %+v", p)
				}
			}
		}
	})
}

// Any bytes either load as a roster whose every entry is usable (a backend,
// an agent or a model, a known thinking level, a non-blank name that Lookup
// finds) or fail with an error; nothing panics.
func FuzzLoadRoster(f *testing.F) {
	for _, seed := range []string{
		`{"fast":{"backend":"opencode-acp","model":"anthropic/claude"},"deep":{"backend":"pi","agent":"plan","thinking":"high"}}`,
		`{"x":{"backend":"codex-app-server","model":"gpt","system":"no"}}`,
		`{"x":{"backend":"","model":"m"}}`, `{"x":{"backend":"b"}}`, `{" ":{"backend":"b","model":"m"}}`,
		`{"x":{"backend":"b","model":"m","thinking":"huge"}}`, `{}`, `[]`, `null`, `{"x":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "roster.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := LoadRoster(path)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error message")
			}
			return
		}
		for _, name := range r.Names() {
			e, err := r.Lookup(name)
			if err != nil {
				t.Fatalf("Lookup(%q) of a listed name: %v", name, err)
			}
			if strings.TrimSpace(name) == "" || strings.TrimSpace(e.Backend) == "" ||
				(strings.TrimSpace(e.Agent) == "" && strings.TrimSpace(e.Model) == "") || CheckThinkingLevel(e.Thinking) != nil {
				t.Fatalf("loaded an unusable entry %q: %+v", name, e)
			}
		}
		if _, listed := r.Entries["\x00missing"]; !listed {
			if _, err := r.Lookup("\x00missing"); err == nil {
				t.Fatal("Lookup of a missing name did not fail")
			}
		}
	})
}

func writeFuzzFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
