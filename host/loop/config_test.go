package loop

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// writeFiles writes name -> content under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// configCases are configs that fail to load; the messages are pinned in
// testdata/config_errors.golden. "main.json" is loaded as a loop config,
// "team.json" as a team config.
var configCases = []struct {
	name  string
	files map[string]string
}{
	{"loop empty", map[string]string{"main.json": `{}`}},
	{"loop only post", map[string]string{"main.json": `{"post":[{"name":"p","prompt":"x"}]}`}},
	{"loop negative max_iterations", map[string]string{"main.json": `{"max_iterations":-1,"loop":[{"name":"a","prompt":"x"}]}`}},
	{"loop max_iterations above the limit", map[string]string{"main.json": `{"max_iterations":5000,"loop":[{"name":"a","prompt":"x"}]}`}},
	{"loop phase without name", map[string]string{"main.json": `{"pre":[{"name":"a","prompt":"x"}],"loop":[{"name":"b","prompt":"x"},{"prompt":"x"}]}`}},
	{"loop phase without prompt", map[string]string{"main.json": `{"pre":[{"name":"foo"}]}`}},
	{"loop prompt and prompt_file", map[string]string{"main.json": `{"pre":[{"name":"foo","prompt":"x","prompt_file":"p.md"}]}`}},
	{"loop prompt and loop_file", map[string]string{"main.json": `{"pre":[{"name":"foo","prompt":"x","loop_file":"l.json"}]}`}},
	{"loop prompt_file and team_file", map[string]string{"main.json": `{"pre":[{"name":"foo","prompt_file":"p.md","team_file":"t.json"}]}`}},
	{"loop loop_file and team_file", map[string]string{"main.json": `{"pre":[{"name":"foo","loop_file":"l.json","team_file":"t.json"}]}`}},
	{"loop duplicate names", map[string]string{"main.json": `{"pre":[{"name":"build","prompt":"x"}],"loop":[{"name":"build","prompt":"y"}]}`}},
	{"loop reserved initial", map[string]string{"main.json": `{"pre":[{"name":"(initial)","prompt":"x"}]}`}},
	{"loop agent on a loop phase", map[string]string{"main.json": `{"loop":[{"name":"a","prompt":"x","agent":"build"}]}`}},
	{"loop unknown field", map[string]string{"main.json": `{"loop":[{"name":"a","prompt":"x"}],"verify":true}`}},
	{"loop unknown phase field", map[string]string{"main.json": `{"loop":[{"name":"a","prompt":"x","system":"be nice"}]}`}},
	{"loop wrong type", map[string]string{"main.json": `{"max_iterations":"5","loop":[{"name":"a","prompt":"x"}]}`}},
	{"loop syntax error", map[string]string{"main.json": "{\n  \"loop\": [\n    {\"name\": \"a\",}\n  ]\n}"}},
	{"loop top level array", map[string]string{"main.json": `[{"name":"a"}]`}},
	{"loop trailing data", map[string]string{"main.json": `{"pre":[{"name":"a","prompt":"x"}]} {}`}},
	{"loop missing prompt_file", map[string]string{"main.json": `{"pre":[{"name":"a","prompt_file":"nope.md"}]}`}},
	{"loop empty prompt_file", map[string]string{"main.json": `{"pre":[{"name":"a","prompt_file":"empty.md"}]}`, "empty.md": "\n"}},
	{"loop bad template", map[string]string{"main.json": `{"pre":[{"name":"a","prompt":"{{.Phase"}]}`}},
	{"loop unknown template variable", map[string]string{"main.json": `{"pre":[{"name":"a","prompt":"{{.Branch}}"}]}`}},
	{"loop roster_entry without a roster", map[string]string{"main.json": `{"pre":[{"name":"a","prompt":"x","roster_entry":"fast"}]}`}},
	{"loop roster_entry not found", map[string]string{"main.json": `{"roster_file":"roster.json","pre":[{"name":"a","prompt":"x","roster_entry":"slow"}]}`,
		"roster.json": `{"fast":{"backend":"scripted","model":"m"}}`}},
	{"loop roster_entry with loop_file", map[string]string{"main.json": `{"pre":[{"name":"a","loop_file":"l.json","roster_entry":"fast"}]}`}},
	{"loop bad roster_file", map[string]string{"main.json": `{"roster_file":"roster.json","pre":[{"name":"a","prompt":"x"}]}`,
		"roster.json": `{"fast":{"backend":"scripted","model":"m","system":"x"}}`}},
	{"loop roster entry without agent or model", map[string]string{"main.json": `{"roster_file":"roster.json","pre":[{"name":"a","prompt":"x"}]}`,
		"roster.json": `{"fast":{"backend":"scripted"}}`}},
	{"loop roster entry with a bad thinking level", map[string]string{"main.json": `{"roster_file":"roster.json","pre":[{"name":"a","prompt":"x"}]}`,
		"roster.json": `{"fast":{"backend":"scripted","model":"m","thinking":"huge"}}`}},
	{"loop on_incomplete without requires", map[string]string{"main.json": `{"pre":[{"name":"a","prompt":"x","on_incomplete":{"nudge":"go on"}}]}`}},
	{"loop max_nudges out of range", map[string]string{"main.json": `{"pre":[{"name":"a","prompt":"x","requires":{"files":["a"]},"on_incomplete":{"max_nudges":-2}}]}`}},
	{"loop requires on a nested phase", map[string]string{"main.json": `{"pre":[{"name":"a","loop_file":"l.json","requires":{"files":["a"]}}]}`}},
	{"loop empty required path", map[string]string{"main.json": `{"pre":[{"name":"a","prompt":"x","requires":{"non_empty_files":[" "]}}]}`}},
	{"loop nested error", map[string]string{"main.json": `{"pre":[{"name":"outer","loop_file":"inner.json"}]}`, "inner.json": `{"loop":[{"name":"x"}]}`}},
	{"loop nested missing", map[string]string{"main.json": `{"pre":[{"name":"outer","team_file":"missing.json"}]}`}},
	{"loop nested cycle", map[string]string{"main.json": `{"pre":[{"name":"outer","loop_file":"b.json"}]}`, "b.json": `{"pre":[{"name":"back","loop_file":"main.json"}]}`}},
	{"team empty", map[string]string{"team.json": `{"post":[{"name":"p","prompt":"x"}]}`}},
	{"team conditional without pre", map[string]string{"team.json": `{"team":[{"name":"a","prompt":"x","conditional":true}]}`}},
	{"team conditional on pre", map[string]string{"team.json": `{"pre":[{"name":"a","prompt":"x","conditional":true}],"team":[{"name":"b","prompt":"x"}]}`}},
	{"team duplicate across sections", map[string]string{"team.json": `{"pre":[{"name":"a","prompt":"x"}],"team":[{"name":"b","prompt":"x"}],"post":[{"name":"b","prompt":"x"}]}`}},
	{"team iteration in a member", map[string]string{"team.json": `{"team":[{"name":"a","prompt":"round {{.Iteration}}"}]}`}},
	{"team roster_entry with agent", map[string]string{"team.json": `{"team":[{"name":"a","prompt":"x","roster_entry":"r","agent":"build"}]}`}},
	{"team max_iterations", map[string]string{"team.json": `{"max_iterations":3,"team":[{"name":"a","prompt":"x"}]}`}},
}

func TestConfigErrorsGolden(t *testing.T) {
	var got strings.Builder
	for _, c := range configCases {
		dir := t.TempDir()
		writeFiles(t, dir, c.files)
		var err error
		if _, ok := c.files["team.json"]; ok {
			_, err = LoadTeam(filepath.Join(dir, "team.json"), LoadOptions{})
		} else {
			_, err = LoadLoop(filepath.Join(dir, "main.json"), LoadOptions{})
		}
		if err == nil {
			t.Errorf("%s: loaded without error", c.name)
			continue
		}
		msg := strings.ReplaceAll(err.Error(), dir, "$DIR")
		fmt.Fprintf(&got, "%s: %s\n", c.name, msg)
	}
	golden := filepath.Join("testdata", "config_errors.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got.String() != string(want) {
		t.Errorf("messages differ from %s (go test -update rewrites it):\n got:\n%s\nwant:\n%s", golden, got.String(), want)
	}
}

// The messages the contract spells out (docs/loop.md#phase) are exactly these.
func TestConfigErrorsOfTheContract(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{}`, "loop config: at least one of pre or loop must be non-empty"},
		{`{"max_iterations":-3,"loop":[{"name":"a","prompt":"x"}]}`, "loop config: max_iterations must be >= 1 when loop phases are present"},
		{`{"pre":[{"prompt":"build it"}]}`, "loop config: phase[index 0]: name must not be empty"},
		{`{"pre":[{"name":"X"}]}`, "loop config: phase[name X]: prompt must not be empty (set prompt or prompt_file)"},
		{`{"pre":[{"name":"X","prompt":"a","prompt_file":"b"}]}`, "loop config: phase[name X]: prompt and prompt_file are mutually exclusive"},
		{`{"pre":[{"name":"X","prompt":"a"}],"loop":[{"name":"X","prompt":"b"}]}`, `loop config: duplicate phase name: "X"`},
		{`{"pre":[{"name":"(initial)","prompt":"a"}]}`, `loop config: duplicate phase name: "(initial)"`},
	} {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"l.json": c.json})
		_, err := LoadLoop(filepath.Join(dir, "l.json"), LoadOptions{})
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: got %v, want %q", c.json, err, c.want)
		}
	}
}

func TestLoadLoop(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"cfg/loop.json": `{
			"roster_file": "../roster.json",
			"pre": [{"name": "build", "prompt_file": "prompts/build.md"}],
			"loop": [
				{"name": "test", "prompt": "test {{.Iteration}}/{{.MaxIterations}}", "roster_entry": "fast"},
				{"name": "fix", "resume_from_previous": true, "prompt": "fix",
				 "requires": {"files": ["FIXED"], "non_empty_files": ["notes.md"]},
				 "on_incomplete": {"nudge": "write them", "max_nudges": 3}}
			],
			"post": [{"name": "deep", "team_file": "team.json"}]
		}`,
		"cfg/prompts/build.md": "build {{.Phase}}",
		"cfg/team.json":        `{"team": [{"name": "m1", "prompt": "one", "agent": "a"}, {"name": "m2", "prompt": "two", "roster_entry": "fast"}]}`,
		"roster.json":          `{"fast": {"backend": "scripted", "model": "quick", "thinking": "low"}, "slow": {"backend": "echo", "agent": "deep"}}`,
	})
	c, err := LoadLoop(filepath.Join(dir, "cfg", "loop.json"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxIterations != DefaultMaxIterations {
		t.Errorf("max_iterations %d, want the default %d", c.MaxIterations, DefaultMaxIterations)
	}
	if c.Pre[0].Prompt != "build {{.Phase}}" {
		t.Errorf("prompt_file not read relative to the config: %q", c.Pre[0].Prompt)
	}
	if c.Roster == nil || len(c.Roster.Entries) != 2 {
		t.Fatalf("roster_file not loaded relative to the config: %+v", c.Roster)
	}
	if c.Post[0].NestedTeam == nil || c.Post[0].NestedTeam.Roster != c.Roster {
		t.Fatalf("nested team not loaded, or without the parent's roster: %+v", c.Post[0].NestedTeam)
	}
	if got := c.Loop[1].maxNudges(); got != 3 {
		t.Errorf("max nudges %d", got)
	}
	run := Identity{Backend: "opencode-acp", Thinking: ""}
	if got := c.Backends(run); strings.Join(got, ",") != "opencode-acp,scripted" {
		t.Errorf("backends %v", got)
	}
	id, err := run.forPhase(&c.Loop[0], KindLoop, c.Roster)
	if err != nil || id != (Identity{Backend: "scripted", Model: "quick", Thinking: "low"}) {
		t.Errorf("roster identity %+v %v", id, err)
	}
	run.Thinking = "high"
	if id, _ := run.forPhase(&c.Loop[0], KindLoop, c.Roster); id.Thinking != "high" {
		t.Errorf("an explicit run thinking must win over the entry's: %+v", id)
	}
	team := c.Post[0].NestedTeam
	if id, _ := (Identity{Backend: "b", Agent: "x", Model: "m"}).forPhase(&team.Team[0], KindTeam, team.Roster); id != (Identity{Backend: "b", Agent: "a"}) {
		t.Errorf("member agent override: %+v (the model is left to the agent's config)", id)
	}
}

func TestMaxIterationsBounds(t *testing.T) {
	for _, c := range []struct {
		max, want int
		ok        bool
	}{{0, 10, true}, {1, 1, true}, {1000, 1000, true}, {1001, 0, false}} {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"l.json": fmt.Sprintf(`{"max_iterations":%d,"loop":[{"name":"a","prompt":"x"}]}`, c.max)})
		cfg, err := LoadLoop(filepath.Join(dir, "l.json"), LoadOptions{})
		if (err == nil) != c.ok || (c.ok && cfg.MaxIterations != c.want) {
			t.Errorf("max_iterations %d: %+v %v", c.max, cfg, err)
		}
	}
}

func TestLoadRoster(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"ok.json":    `{"planner": {"backend": "codex-app-server", "model": "gpt", "thinking": "high"}, "coder": {"backend": "opencode-acp", "agent": "build"}}`,
		"null.json":  `null`,
		"empty.json": `{"": {"backend": "x", "model": "m"}}`,
	})
	r, err := LoadRoster(filepath.Join(dir, "ok.json"))
	if err != nil || strings.Join(r.Names(), ",") != "coder,planner" {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := r.Lookup("nobody"); err == nil || !strings.Contains(err.Error(), `roster entry "nobody" not found`) {
		t.Errorf("lookup: %v", err)
	}
	if _, err := LoadRoster(filepath.Join(dir, "null.json")); err != ErrNotObject {
		t.Errorf("null roster: %v", err)
	}
	if _, err := LoadRoster(filepath.Join(dir, "empty.json")); err == nil {
		t.Error("an empty entry name was accepted")
	}
}
