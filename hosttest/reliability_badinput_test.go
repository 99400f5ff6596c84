//go:build reliability

package hosttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// badInputGuard: no bad input may take longer than this to be refused.
const badInputGuard = 20 * time.Second

// TestBadInput: malformed configs and unreadable files each give a non-zero
// exit within badInputGuard, an error naming what was wrong, and the
// sentinel.
func TestBadInput(t *testing.T) {
	cases := []struct {
		name string
		// setup prepares the world and returns extra arguments.
		setup func(w *world) []string
		// want is a substring of stderr (case-insensitive).
		want string
	}{
		{"config not TOML", func(w *world) []string {
			w.userConfig("[backends.scripted\nenv = {")
			return nil
		}, "config.toml"},
		{"config wrong type", func(w *world) []string {
			w.userConfig("[backends.scripted]\nenv = 42\n")
			return nil
		}, "env"},
		{"config binary garbage", func(w *world) []string {
			w.userConfig("\x00\xff\xfe garbage \x01")
			return nil
		}, "config.toml"},
		{"config is a directory", func(w *world) []string {
			if err := os.MkdirAll(filepath.Join(w.config, "avenor", "config.toml"), 0o755); err != nil {
				w.t.Fatal(err)
			}
			return nil
		}, "config.toml"},
		{"prompt file missing", func(w *world) []string {
			return []string{"--prompt-file", w.path("nope.md")}
		}, "nope.md"},
		{"prompt file is a directory", func(w *world) []string {
			return []string{"--prompt-file", w.work}
		}, "prompt"},
		{"loop file malformed", func(w *world) []string {
			return []string{"--loop-file", w.writeFile("loop.json", `{"phases": [`)}
		}, "loop config"},
		{"roster file missing", func(w *world) []string {
			return []string{"--roster-file", w.path("roster.toml"), "--roster-entry", "x"}
		}, "roster.toml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			extra := tc.setup(w)
			sent := w.path("run.done")
			args := []string{"--dir", w.work, "--sentinel-file", sent}
			if !containsFlag(extra, "--roster-file") {
				args = append(args, "--backend", "scripted")
			}
			if !containsFlag(extra, "--prompt-file") {
				args = append(args, "--prompt", "say hi")
			}
			res := w.run(append(args, extra...)...)
			checkRefused(t, res, tc.want)
			if b, err := os.ReadFile(sent); err != nil || !strings.HasPrefix(string(b), "FAILED\n") {
				t.Errorf("sentinel: %q %v, want FAILED", b, err)
			}
		})
	}
}

// TestBadRuntimeOutput: a runtime that prints garbage, or one 100 MB line,
// ends the turn cleanly: no hang, a sentinel, session.end last, and a
// bounded event log.
func TestBadRuntimeOutput(t *testing.T) {
	cases := []struct{ name, script string }{
		{"binary garbage", `lines head -c 2000000 /dev/urandom`},
		{"NUL and invalid UTF-8", `lines printf 'a\000b\377\376c\n\033[31mred\n'`},
		{"100 MB line", `lines head -c 104857600 /dev/zero | tr '\000' x`},
		{"no trailing newline", `lines printf 'last line without newline'`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			evPath, sent := w.path("events.ndjson"), w.path("run.done")
			res := w.run("--backend", "scripted", "--dir", w.work, "--on-event", evPath, "--sentinel-file", sent,
				"--prompt", tc.script)
			if res.elapsed > badInputGuard {
				t.Errorf("took %v", res.elapsed)
			}
			if _, err := os.Stat(sent); err != nil {
				t.Fatalf("no sentinel: %v; %v", err, res)
			}
			evs := readEvents(t, evPath)
			checkSeq(t, evs)
			lastSessionEnd(t, evs)
			if st, _ := os.Stat(evPath); st.Size() > 64<<20 {
				t.Errorf("the event log holds %d bytes: a runtime line is not bounded", st.Size())
			}
			t.Logf("%v; %d events, exit %d", res.elapsed.Round(time.Millisecond), len(evs), res.code)
		})
	}
}

func containsFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag {
			return true
		}
	}
	return false
}

func checkRefused(t *testing.T, res result, want string) {
	t.Helper()
	if res.code == 0 {
		t.Errorf("accepted: %v", res)
	}
	if res.elapsed > badInputGuard {
		t.Errorf("took %v to refuse", res.elapsed)
	}
	if !strings.Contains(strings.ToLower(res.stderr), strings.ToLower(want)) {
		t.Errorf("stderr does not name %q: %q", want, res.stderr)
	}
	if strings.Contains(res.stderr, "panic:") {
		t.Errorf("panic: %s", res.stderr)
	}
}
