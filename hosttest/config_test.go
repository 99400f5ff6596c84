package hosttest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// layers are the config layers from lowest to highest (README: defaults <
// user file < project file < environment < flags).
var layers = []string{"default", "user", "project", "env", "flag"}

// layered is one setting and the value each layer above the default sets;
// a run's outcome is decided by the highest layer that sets it.
type layered struct {
	key, env, flag string
	// values[i] is the value of layers[i+1], as the environment and the
	// command line write it; quote says whether TOML needs it quoted.
	values [4]string
	quote  bool
	script string
	// check verifies that the run behaved as value says ("" is the default).
	check func(t *testing.T, res result, evs []event, value string)
}

func (l layered) tomlLine(value string) string {
	if l.quote {
		value = `"` + value + `"`
	}
	return l.key + " = " + value + "\n"
}

// TestConfigLayering: backend, timeout and max_retries each come from every
// layer in turn, observed through what the run does.
func TestConfigLayering(t *testing.T) {
	t.Parallel()
	settings := []layered{
		{
			key: "backend", env: "AVENOR_BACKEND", flag: "--backend", script: "say hi",
			values: [4]string{"echo", "scripted", "echo", "scripted"}, quote: true,
			check: func(t *testing.T, res result, evs []event, value string) {
				if value == "" { // the default, opencode-acp, has no plugin here
					if res.code != 1 || !strings.Contains(res.stderr, `unknown backend "opencode-acp"`) {
						t.Errorf("want the default backend opencode-acp (not installed): exit 1; got %v", res)
					}
					return
				}
				if res.code != 0 {
					t.Fatalf("want exit 0; got %v", res)
				}
				if got := only(evs, "session.start")[0].str("backend"); got != value {
					t.Errorf("session.start backend = %q, want %q", got, value)
				}
			},
		},
		{
			key: "timeout", env: "AVENOR_TIMEOUT", flag: "--timeout", script: "sleep 2s",
			values: [4]string{"300ms", "1m", "300ms", "1m"}, quote: true,
			check: func(t *testing.T, res result, evs []event, value string) {
				want, stop := 0, "end_turn"
				if value == "300ms" {
					want, stop = 124, "timeout"
				}
				if res.code != want {
					t.Fatalf("timeout %q: want exit %d; got %v", value, want, res)
				}
				if got := lastSessionEnd(t, evs).str("stop_reason"); got != stop {
					t.Errorf("session.end stop_reason = %q, want %q", got, stop)
				}
			},
		},
		{
			key: "max_retries", env: "AVENOR_MAX_RETRIES", flag: "--max-retries", script: "fail x",
			values: [4]string{"1", "0", "1", "0"},
			check: func(t *testing.T, res result, evs []event, value string) {
				if res.code != 1 {
					t.Fatalf("want exit 1; got %v", res)
				}
				want := 0
				if value == "1" {
					want = 1
				}
				if got := len(only(evs, "avenor.retry")); got != want {
					t.Errorf("max_retries %q: %d avenor.retry events, want %d", value, got, want)
				}
				if got := len(only(evs, "session.start")); got != want+1 {
					t.Errorf("max_retries %q: %d attempts, want %d", value, got, want+1)
				}
			},
		},
	}
	for _, s := range settings {
		for top, layer := range layers {
			t.Run(s.key+"/"+layer, func(t *testing.T) {
				t.Parallel()
				w := newWorld(t)
				project := w.path("project")
				if err := os.MkdirAll(project, 0o755); err != nil {
					t.Fatal(err)
				}
				evPath := w.path("events.ndjson")
				args := []string{"--dir", project, "--prompt", s.script, "--on-event", evPath}
				var env []string
				value := ""
				for i := 1; i <= top; i++ {
					value = s.values[i-1]
					switch layers[i] {
					case "user":
						w.userConfig(s.tomlLine(value))
					case "project":
						w.writeFile(filepath.Join("project", ".avenor", "config.toml"), s.tomlLine(value))
					case "env":
						env = append(env, s.env+"="+value)
					case "flag":
						args = append(args, s.flag, value)
					}
				}
				if s.key != "backend" {
					args = append(args, "--backend", "scripted")
				}
				res := w.runEnv(env, args...)
				var evs []event
				if _, err := os.Stat(evPath); err == nil {
					evs = readEvents(t, evPath)
				}
				s.check(t, res, evs, value)
			})
		}
	}
}

// TestSecretsNeverLeak: a backend's env from the config reaches the runtime
// but never stdout, stderr, the event log, the sentinel or any file avenor
// or its plugin leaves behind, even at trace log level.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, script string
		code         int
	}{
		{"clean turn", "say hi\nshell printf %s \"$API_KEY\" | sha256sum", 0},
		{"failed turn", "fail boom", 1},
		{"crashed plugin", "say x\ndie", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b [16]byte
			_, _ = rand.Read(b[:])
			marker := "sk-" + hex.EncodeToString(b[:])
			w := newWorld(t)
			w.userConfig("[backends.scripted]\nenv = { API_KEY = \"" + marker + "\" }\n")
			evPath, sentPath := w.path("out/events.ndjson"), w.path("out/run.done")
			if err := os.MkdirAll(filepath.Dir(evPath), 0o755); err != nil {
				t.Fatal(err)
			}
			res := w.runEnv([]string{"AVENOR_LOG_LEVEL=trace"}, "--backend", "scripted", "--prompt", tc.script,
				"--on-event", evPath, "--sentinel-file", sentPath, "--dir", w.work)
			if res.code != tc.code {
				t.Fatalf("want exit %d; got %v", tc.code, res)
			}
			if !strings.Contains(res.stderr, "[TRACE]") && !strings.Contains(res.stderr, "[DEBUG]") {
				t.Errorf("AVENOR_LOG_LEVEL=trace logged nothing to stderr: %q", res.stderr)
			}
			evs := readEvents(t, evPath)
			if tc.code == 0 {
				// The runtime proves it got the key by its hash, never the key itself.
				sum := sha256.Sum256([]byte(marker))
				if got, want := lastSessionEnd(t, evs).str("final_output"), "hi"+hex.EncodeToString(sum[:])+"  -\n"; got != want {
					t.Errorf("final_output = %q, want %q: the runtime did not get API_KEY from [backends.scripted] env", got, want)
				}
			}
			for what, s := range map[string]string{"stdout": res.stdout, "stderr": res.stderr} {
				if strings.Contains(s, marker) {
					t.Errorf("%s holds the secret:\n%s", what, s)
				}
			}
			userFile := filepath.Join(w.config, "avenor", "config.toml")
			for _, dir := range []string{w.root, w.tmp} {
				_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
					if err != nil || d.IsDir() || p == userFile {
						return nil
					}
					if b, _ := os.ReadFile(p); strings.Contains(string(b), marker) {
						t.Errorf("%s holds the secret", p)
					}
					return nil
				})
			}
		})
	}
}
