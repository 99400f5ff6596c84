package hosttest

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// completions runs cobra's hidden completion command the shell scripts
// call, and returns the candidates (the lines before the ":<directive>").
func completions(t *testing.T, w *world, words ...string) []string {
	t.Helper()
	res := w.run(append([]string{"__complete"}, words...)...)
	if res.code != 0 {
		t.Fatalf("__complete %q: %v", words, res)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		if strings.HasPrefix(l, ":") {
			break
		}
		out = append(out, strings.SplitN(l, "\t", 2)[0])
	}
	return out
}

// TestCompletionBackends: `avenor completion bash|zsh|fish` prints each
// shell's script, which asks avenor itself; --backend completes from the
// installed plugins (echo and scripted here) wherever a command has it,
// and at the root, whose command line is a run's.
func TestCompletionBackends(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for shell, marker := range map[string]string{"bash": "__start_avenor", "zsh": "#compdef avenor", "fish": "complete -c avenor"} {
		res := w.run("completion", shell)
		if res.code != 0 || !strings.Contains(res.stdout, marker) || !strings.Contains(res.stdout, "__complete") {
			t.Errorf("completion %s: want exit 0 and a script with %q calling __complete; got exit %d, %d bytes\n%s",
				shell, marker, res.code, len(res.stdout), tail(res.stderr, 400))
		}
	}
	if res := w.run("completion"); res.code != 2 || !strings.Contains(res.stderr, "bash, zsh or fish") {
		t.Errorf("completion without a shell: want exit 2 naming the shells; got %v", res)
	}

	for _, words := range [][]string{
		{"--backend", ""},
		{"run", "--backend", ""},
		{"control", "--socket", "x", "spawn", "--backend", ""},
	} {
		got := completions(t, w, words...)
		if !slices.Contains(got, "echo") || !slices.Contains(got, "scripted") {
			t.Errorf("__complete %q = %q, want echo and scripted (the installed plugins' backends)", words, got)
		}
	}
	if got := completions(t, w, "--backend", "scr"); !slices.Equal(got, []string{"scripted"}) {
		t.Errorf("__complete --backend scr = %q, want [scripted]", got)
	}

	// The bash script really completes, through this avenor.
	if _, err := exec.LookPath("bash"); err == nil {
		script := `_get_comp_words_by_ref() { cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
compopt() { :; }
source <("$AVENOR" completion bash)
COMP_WORDS=(avenor run --backend "e"); COMP_CWORD=3; COMP_LINE="avenor run --backend e"; COMP_POINT=${#COMP_LINE}
__start_avenor avenor e --backend
printf '%s\n' "${COMPREPLY[@]}"`
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "--norc", "-c", script)
		cmd.Env = append(append([]string{}, w.env...), "AVENOR="+bins.avenor, "PATH="+filepath.Dir(bins.avenor)+":"+basePATH)
		cmd.Dir = w.work
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "echo" {
			t.Errorf("bash completion of `avenor run --backend e<TAB>`: want echo; got %q (%v)", out, err)
		}
	}

	// "completion" is a sub-command only as the first word: as a flag's
	// value it is still a run's prompt.
	ev := w.path("ev.ndjson")
	if res := w.run("--backend", "echo", "--prompt", "completion", "--on-event", ev); res.code != 0 {
		t.Errorf("a run whose prompt is \"completion\": want exit 0; got %v", res)
	}
}

// TestConfigShowProvenance: with a user file, a project file, an
// environment variable and a flag each setting one key, config show gives
// every value and the file, variable or flag it came from; env values of a
// backend table are masked.
func TestConfigShowProvenance(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.userConfig("model = \"user-model\"\nlabel = \"user-label\"\n")
	project := w.path("work")
	w.writeFile("work/.avenor/config.toml", "label = \"project-label\"\n[backends.echo]\nenv = { ECHO_KEY = \"hunter2\" }\noptions = { depth = 3 }\n")
	res := w.runEnv([]string{"AVENOR_TIMEOUT=90s"}, "config", "show", "--json", "--max-retries", "4")
	if res.code != 0 {
		t.Fatalf("config show: %v", res)
	}
	if strings.Contains(res.stdout, "hunter2") {
		t.Errorf("config show printed a backend env value: %s", res.stdout)
	}
	var rep struct {
		UserFile    string `json:"user_file"`
		ProjectFile string `json:"project_file"`
		Settings    []struct {
			Key    string `json:"key"`
			Value  any    `json:"value"`
			Source string `json:"source"`
		} `json:"settings"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		t.Fatalf("config show --json: %v\n%s", err, res.stdout)
	}
	userFile := filepath.Join(w.config, "avenor", "config.toml")
	projectFile := filepath.Join(project, ".avenor", "config.toml")
	if rep.UserFile != userFile || rep.ProjectFile != projectFile {
		t.Errorf("files = %q, %q; want %q, %q", rep.UserFile, rep.ProjectFile, userFile, projectFile)
	}
	want := map[string][2]any{
		"backend":                     {"opencode-acp", "default"},
		"model":                       {"user-model", userFile},
		"label":                       {"project-label", projectFile},
		"timeout":                     {"1m30s", "env AVENOR_TIMEOUT"},
		"max_retries":                 {float64(4), "flag --max-retries"},
		"backends.echo.env.ECHO_KEY":  {"<redacted>", projectFile},
		"backends.echo.options.depth": {float64(3), projectFile},
	}
	got := map[string][2]any{}
	for _, s := range rep.Settings {
		got[s.Key] = [2]any{s.Value, s.Source}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v (value, source), want %v", k, got[k], v)
		}
	}

	// The table says the same.
	res = w.runEnv([]string{"AVENOR_TIMEOUT=90s"}, "config", "show", "--max-retries", "4")
	for _, re := range []string{`(?m)^model\s+"user-model"\s+` + regexp.QuoteMeta(userFile) + `$`,
		`(?m)^timeout\s+"1m30s"\s+env AVENOR_TIMEOUT$`, `(?m)^max_retries\s+4\s+flag --max-retries$`} {
		if !regexp.MustCompile(re).MatchString(res.stdout) {
			t.Errorf("config show: no line matching %s in\n%s", re, res.stdout)
		}
	}
	// A value no setting takes is refused as a run would refuse it.
	if res := w.run("config", "show", "--max-retries", "many"); res.code == 0 || !strings.Contains(res.stderr, "max-retries") {
		t.Errorf("config show --max-retries many: want a failure naming the flag; got %v", res)
	}
}

// TestDebugLogging: AVENOR_LOG=debug (or --log-level debug, or --log-file)
// logs the config files avenor read or looked for and the plugin binary it
// chose; a plugin's own log lines carry its name once.
func TestDebugLogging(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.userConfig("label = \"x\"\n")
	userFile := filepath.Join(w.config, "avenor", "config.toml")
	plugin := filepath.Join(bins.pluginDir, "avenor-plugin-echo")
	check := func(name, log string) {
		t.Helper()
		for _, want := range []string{
			"config file read: layer=user path=" + userFile,
			"plugin binary chosen: backend=echo family=echo path=" + plugin + " source=AVENOR_PLUGIN_PATH",
		} {
			if !strings.Contains(log, want) {
				t.Errorf("%s: the log lacks %q:\n%s", name, want, log)
			}
		}
		seen := false
		for _, l := range strings.Split(log, "\n") {
			if n := strings.Count(l, "avenor-plugin-echo"); n > 0 && !strings.Contains(l, plugin) {
				seen = true
				if n != 1 || strings.Contains(l, "@module") {
					t.Errorf("%s: a plugin line names the plugin %d times: %s", name, n, l)
				}
			}
		}
		if !seen {
			t.Errorf("%s: no line of the plugin's own log:\n%s", name, log)
		}
	}
	plugDebug := "AVENOR_PLUGIN_LOG_LEVEL=debug"
	res := w.runEnv([]string{"AVENOR_LOG=debug", plugDebug}, "--backend", "echo", "--prompt", "hi")
	if res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	check("AVENOR_LOG=debug", res.stderr)

	res = w.runEnv([]string{plugDebug}, "--backend", "echo", "--prompt", "hi", "-log-level", "debug")
	check("-log-level debug", res.stderr)

	logFile := w.path("avenor.log")
	res = w.runEnv([]string{"AVENOR_LOG=debug", plugDebug}, "--log-file", logFile, "--backend", "echo", "--prompt", "hi")
	if res.code != 0 || strings.Contains(res.stderr, "plugin binary chosen") {
		t.Errorf("--log-file: want exit 0 and no log on stderr; got %v", res)
	}
	check("--log-file", readFile(t, logFile))

	if res := w.run("--log-level", "loud", "--backend", "echo", "--prompt", "hi"); res.code != 2 || !strings.Contains(res.stderr, `--log-level "loud"`) {
		t.Errorf("--log-level loud: want exit 2 naming the flag; got %v", res)
	}
	if res := w.runEnv([]string{"AVENOR_LOG=loud"}, "--backend", "echo", "--prompt", "hi"); res.code != 1 || !strings.Contains(res.stderr, "AVENOR_LOG") {
		t.Errorf("AVENOR_LOG=loud: want exit 1 naming the variable; got %v", res)
	}
	// Without debug, none of it.
	if res := w.run("--backend", "echo", "--prompt", "hi"); strings.Contains(res.stderr, "config file") {
		t.Errorf("default level logged debug lines: %v", res)
	}
}

// TestHelpExamples: every command's --help, each `avenor control`
// sub-command's included, has an Examples: section. The commands are
// those shell completion offers, so a new one is checked too.
func TestHelpExamples(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var paths [][]string
	var walk func(path []string, depth int)
	walk = func(path []string, depth int) {
		paths = append(paths, path)
		if depth == 2 {
			return
		}
		for _, c := range completions(t, w, append(append([]string{}, path...), "")...) {
			if c == "help" || strings.HasPrefix(c, "-") || len(path) > 0 && path[0] == "completion" {
				continue // completion's candidates are shells, not commands
			}
			walk(append(append([]string{}, path...), c), depth+1)
		}
	}
	walk(nil, 0)
	if !slices.ContainsFunc(paths, func(p []string) bool { return slices.Equal(p, []string{"control", "spawn"}) }) {
		t.Fatalf("completion did not offer control spawn; commands: %q", paths)
	}
	for _, p := range paths {
		res := w.run(append(append([]string{}, p...), "--help")...)
		if res.code != 0 || !strings.Contains(res.stdout, "Examples:\n  ") {
			t.Errorf("avenor %s --help: want exit 0 and an Examples: section; got exit %d\n%s", strings.Join(p, " "), res.code, tail(res.stdout, 300))
		}
	}
}

// TestBackendErrorOnStderr: a failure a backend reports only in the stream
// (an avenor.error of its own, as codex reports a missing API key) is said
// on stderr, once, naming the backend — not only written to the log.
func TestBackendErrorOnStderr(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ev := w.path("ev.ndjson")
	msg := "401 Unauthorized (set OPENAI_API_KEY)"
	script := "error " + msg + "\nerror " + msg + "\nsay done"
	res := w.run("--backend", "scripted", "--prompt", script, "--on-event", ev)
	if res.code != 0 {
		t.Fatalf("want exit 0 (the turn went on); got %v", res)
	}
	line := "avenor: backend scripted: " + msg + "\n"
	if n := strings.Count(res.stderr, line); n != 1 {
		t.Errorf("stderr has %q %d times, want once:\n%s", line, n, res.stderr)
	}
	if got := len(only(readEvents(t, ev), "avenor.error")); got != 2 {
		t.Errorf("the log has %d avenor.error events, want both (2)", got)
	}
}
