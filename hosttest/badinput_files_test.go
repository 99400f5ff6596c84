package hosttest

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// TestBadInputFiles: files named on the command line or in configs that
// cannot serve (a named pipe without a writer, a character device, a
// directory, a dangling symlink) and malformed or unknown-key configs are
// refused with exit 1 within refuseGuard, the exact error naming the path
// and what is wrong, and a FAILED sentinel. A FIFO used to block avenor for
// ever in open(2) (SIGTERM did not end it), /dev/zero to read without end.
// Tests run as root, where chmod 000 does not stop a read, so
// "unreadable" is made of file types instead. Extends the reliability
// suite's TestBadInput, which covers missing files, a directory as prompt
// file and malformed user configs.
func TestBadInputFiles(t *testing.T) {
	t.Parallel()
	const notFile = " is a named pipe (FIFO), not a regular file; give the path of a file"
	cases := []struct {
		name string
		// setup prepares the world and returns the arguments after
		// --backend scripted (nil: --prompt "say hi").
		setup func(w *world) []string
		// msg is stderr after "avenor: "; "<root>" is the world's root.
		msg string
	}{
		{"prompt file is a FIFO", func(w *world) []string { return []string{"--prompt-file", fifo(w, "p.fifo")} },
			"--prompt-file: <root>/p.fifo" + notFile},
		{"prompt file is /dev/zero", func(w *world) []string { return []string{"--prompt-file", "/dev/zero"} },
			"--prompt-file: /dev/zero is a character device, not a regular file; give the path of a file"},
		{"prompt file is a dangling symlink", func(w *world) []string {
			link := w.path("dangling.md")
			if err := os.Symlink(w.path("gone.md"), link); err != nil {
				w.t.Fatal(err)
			}
			return []string{"--prompt-file", link}
		}, "--prompt-file: open <root>/dangling.md: no such file or directory"},
		{"loop file is a FIFO", func(w *world) []string { return []string{"--loop-file", fifo(w, "loop.json")} },
			"load loop config: loop config: <root>/loop.json" + notFile},
		{"loop file is a directory", func(w *world) []string { return []string{"--loop-file", w.work} },
			"load loop config: loop config: <root>/work is a directory, not a regular file; give the path of a file"},
		{"loop phase prompt_file is a FIFO", func(w *world) []string {
			fifo(w, "phase.md")
			return []string{"--loop-file", w.writeFile("loop.json", `{"loop":[{"name":"l","prompt_file":"phase.md"}]}`)}
		}, `load loop config: loop config: phase[name l]: reading prompt_file "phase.md": <root>/phase.md` + notFile},
		{"team file is a FIFO", func(w *world) []string { return []string{"--team-file", fifo(w, "team.json")} },
			"load team config: team config: <root>/team.json" + notFile},
		{"roster file is a FIFO", func(w *world) []string {
			return []string{"--roster-file", fifo(w, "roster.json"), "--roster-entry", "x", "--prompt", "say hi"}
		}, "--roster-file <root>/roster.json: <root>/roster.json" + notFile},
		{"project config malformed", func(w *world) []string {
			w.writeFile("work/.avenor/config.toml", "[backends.scripted\n")
			return nil
		}, "config <root>/work/.avenor/config.toml: malformed TOML at line 1, column 19: expected character ]"},
		{"project config unknown key", func(w *world) []string {
			w.writeFile("work/.avenor/config.toml", "[backends.scripted]\nbogus = 2\n")
			return nil
		}, "config <root>/work/.avenor/config.toml: backends.scripted.bogus: unknown key (known keys: env, options, plugin)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			extra := tc.setup(w)
			if extra == nil {
				extra = []string{"--prompt", "say hi"}
			}
			args := []string{"--dir", w.work}
			if !containsArg(extra, "--roster-file") {
				args = append(args, "--backend", "scripted")
			}
			sent := w.path("run.done")
			res := w.run(append(append(args, extra...), "--sentinel-file", sent, "--run-id", "b")...)
			checkRefusal(t, res, strings.ReplaceAll(tc.msg, "<root>", w.root))
			checkSentinel(t, sent, validationSentinel(tc.msg, "b"))
		})
	}
}

// fifo makes a named pipe under the world's root; nothing ever writes it.
func fifo(w *world, name string) string {
	w.t.Helper()
	p := w.path(name)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		w.t.Fatal(err)
	}
	return p
}

func containsArg(args []string, arg string) bool {
	for _, a := range args {
		if a == arg {
			return true
		}
	}
	return false
}

// TestStableSpawnBadPromptFile: a spawn whose prompt_file is a named pipe
// or /dev/zero is refused at once as invalid params naming the file; the
// supervisor goes on serving (it used to block that spawn for ever, or read
// without end).
func TestStableSpawnBadPromptFile(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.startStable("badfile", nil)
	c := s.client()
	for _, tc := range []struct{ path, says string }{
		{fifo(w, "spawn.fifo"), "is a named pipe (FIFO), not a regular file"},
		{"/dev/zero", "is a character device, not a regular file"},
	} {
		start := time.Now()
		_, err := spawnRaw(t, c, map[string]any{"backend": "scripted", "dir": w.work, "prompt_file": tc.path})
		if err == nil || !strings.Contains(err.Error(), "prompt_file: "+tc.path+" "+tc.says) || !strings.Contains(err.Error(), "-32000") {
			t.Errorf("spawn with prompt_file %s: %v; want a server error (-32000) saying %q", tc.path, err, tc.says)
		}
		if d := time.Since(start); d > refuseGuard {
			t.Errorf("spawn with prompt_file %s took %v to refuse", tc.path, d)
		}
	}
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say still serving"})
	waitEnded(t, c, sp.RuntimeID, 20*time.Second)
}
