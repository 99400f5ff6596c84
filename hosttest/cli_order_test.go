package hosttest

import (
	"strings"
	"testing"
	"time"
)

// refuseGuard bounds how long a refused command line may take: validation
// happens before any plugin starts.
const refuseGuard = 10 * time.Second

// validationRules are docs/run.md#validation's list, in its order, as far
// as the test plugins can reach it: rule 2 (--server-url for opencode-http)
// is superseded by opencode-http starting its own server
// (docs/backends.md#opencode-http-plugin-opencode), and rule 3 (--pony-config) belongs to the
// pony backend, which avenor does not have; without their plugins both
// backends are unknown, which rule 1 covers.
var validationRules = []struct {
	msg      string
	violated func(flags map[string]bool) bool
}{
	{`unknown backend "nope"`, func(f map[string]bool) bool { return f["backend"] }},
	{"--prompt and --prompt-file are mutually exclusive", func(f map[string]bool) bool { return f["prompt"] && f["prompt-file"] }},
	{"--loop-file and --team-file are mutually exclusive", func(f map[string]bool) bool { return f["loop-file"] && f["team-file"] }},
	{"--loop-file and --resume are mutually exclusive", func(f map[string]bool) bool { return f["loop-file"] && f["resume"] }},
	{"--team-file and --resume are mutually exclusive", func(f map[string]bool) bool { return f["team-file"] && f["resume"] }},
	{"--prompt, --prompt-file, --loop-file, or --team-file is required", func(f map[string]bool) bool {
		return !f["prompt"] && !f["prompt-file"] && !f["loop-file"] && !f["team-file"]
	}},
}

// TestValidationOrder: every combination of the flags that docs/run.md#validation's
// validation list is about (an unknown --backend, --prompt, --prompt-file,
// --loop-file, --team-file, --resume; 64 command lines) is either valid or
// refused with the message of the first rule it breaks in the contract's
// order, exit 1, nothing on stdout and a FAILED sentinel with EXIT_CODE=1,
// within refuseGuard. TestValidationErrors checks each rule alone.
func TestValidationOrder(t *testing.T) {
	t.Parallel()
	ingredients := []string{"backend", "prompt", "prompt-file", "loop-file", "team-file", "resume"}
	refused := 0
	for mask := 0; mask < 1<<len(ingredients); mask++ {
		flags := map[string]bool{}
		var name []string
		for i, in := range ingredients {
			if mask&(1<<i) != 0 {
				flags[in] = true
				name = append(name, in)
			}
		}
		want := ""
		for _, r := range validationRules {
			if r.violated(flags) {
				want = r.msg
				break
			}
		}
		if want == "" {
			continue // a valid command line: it would run
		}
		refused++
		if len(name) == 0 {
			name = []string{"none"}
		}
		t.Run(strings.Join(name, "+"), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			args := []string{"--backend", "scripted"}
			if flags["backend"] {
				args = []string{"--backend", "nope"}
			}
			values := map[string]string{
				"prompt":      "say hi",
				"prompt-file": w.writeFile("prompt.md", "say hi"),
				"loop-file":   w.writeFile("loop.json", `{"loop":[{"name":"l","prompt":"say hi"}]}`),
				"team-file":   w.writeFile("team.json", `{"team":[{"name":"a","prompt":"say hi"}]}`),
				"resume":      "ses_resume",
			}
			for _, in := range ingredients[1:] {
				if flags[in] {
					args = append(args, "--"+in, values[in])
				}
			}
			sent := w.path("run.done")
			res := w.run(append(args, "--sentinel-file", sent, "--run-id", "o")...)
			checkRefusal(t, res, want)
			checkSentinel(t, sent, "FAILED\nSESSION=\nSTOP_REASON=exit_1\nEXIT_CODE=1\nRUN=o\n")
		})
	}
	if refused != 54 {
		t.Errorf("%d refused combinations, want 54 of 64: the rules or the ingredients changed", refused)
	}
}

// TestRosterAndHandlerConflicts: the pairwise conflicts docs/loop.md#rosters names beyond
// its list (--roster-file and --roster-entry go together and then forbid
// --agent, --model and --backend; --roster-entry is direct mode only; the
// permission handler is file: only) each exit 1 with their own message and
// a FAILED sentinel, also when combined with a valid run's flags.
func TestRosterAndHandlerConflicts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string // "<roster>", "<loop>" and "<team>" name files the world holds
		msg  string
	}{
		{"roster-file without roster-entry", []string{"--roster-file", "<roster>", "--prompt", "x"},
			"--roster-file requires --roster-entry (or a --loop-file or --team-file whose phases set roster_entry)"},
		{"roster-entry without roster-file", []string{"--roster-entry", "fast", "--prompt", "x"}, "--roster-entry requires --roster-file"},
		{"roster-entry and backend", []string{"--roster-file", "<roster>", "--roster-entry", "fast", "--backend", "scripted", "--prompt", "x"},
			"--roster-entry and --backend are mutually exclusive"},
		{"roster-entry and agent", []string{"--roster-file", "<roster>", "--roster-entry", "fast", "--agent", "a", "--prompt", "x"},
			"--roster-entry and --agent are mutually exclusive"},
		{"roster-entry and model", []string{"--roster-file", "<roster>", "--roster-entry", "fast", "--model", "m", "--prompt", "x"},
			"--roster-entry and --model are mutually exclusive"},
		{"roster-entry with loop-file", []string{"--roster-file", "<roster>", "--roster-entry", "fast", "--loop-file", "<loop>"},
			"--roster-entry cannot be used with --loop-file or --team-file (set roster_entry on the phases)"},
		{"roster-entry with team-file", []string{"--roster-file", "<roster>", "--roster-entry", "fast", "--team-file", "<team>"},
			"--roster-entry cannot be used with --loop-file or --team-file (set roster_entry on the phases)"},
		{"unknown roster entry", []string{"--roster-file", "<roster>", "--roster-entry", "slow", "--prompt", "x"},
			`--roster-entry: roster entry "slow" not found in <roster>`},
		{"permission handler not file:", []string{"--backend", "scripted", "--permission-handler", "http://h", "--prompt", "x"},
			"--permission-handler supports file:<path> only"},
		{"permission handler without a path", []string{"--backend", "scripted", "--permission-handler", "file:", "--prompt", "x"},
			"--permission-handler file:<path> needs a path"},
		{"http-debug token file without http-debug", []string{"--backend", "scripted", "--http-debug-token-file", "t", "--prompt", "x"},
			"--http-debug-token-file needs --http-debug"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			files := map[string]string{
				"<roster>": w.writeFile("roster.json", `{"fast":{"backend":"scripted","model":"m"}}`),
				"<loop>":   w.writeFile("loop.json", `{"loop":[{"name":"l","prompt":"say hi"}]}`),
				"<team>":   w.writeFile("team.json", `{"team":[{"name":"a","prompt":"say hi"}]}`),
			}
			var args []string
			for _, a := range tc.args {
				if f, ok := files[a]; ok {
					a = f
				}
				args = append(args, a)
			}
			sent := w.path("run.done")
			res := w.run(append(args, "--sentinel-file", sent, "--run-id", "c")...)
			checkRefusal(t, res, strings.ReplaceAll(tc.msg, "<roster>", files["<roster>"]))
			checkSentinel(t, sent, "FAILED\nSESSION=\nSTOP_REASON=exit_1\nEXIT_CODE=1\nRUN=c\n")
		})
	}
}

// checkRefusal: exit 1 within refuseGuard, nothing on stdout, and stderr
// starting with "avenor: <msg>" (an unknown backend goes on to say where
// avenor looked; every other message is the whole of stderr).
func checkRefusal(t *testing.T, res result, msg string) {
	t.Helper()
	if res.code != 1 || res.stdout != "" {
		t.Fatalf("want exit 1 and nothing on stdout; got %v", res)
	}
	if res.elapsed > refuseGuard {
		t.Errorf("took %v to refuse", res.elapsed)
	}
	want := "avenor: " + msg + "\n"
	if strings.HasPrefix(msg, "unknown backend") {
		if !strings.HasPrefix(res.stderr, want) {
			t.Errorf("stderr = %q, want it to start with %q", res.stderr, want)
		}
		return
	}
	if res.stderr != want {
		t.Errorf("stderr:\n got %q\nwant %q", res.stderr, want)
	}
}
