package hosttest

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUnreadableFiles: files avenor cannot read (mode 000, or in a 0700
// directory, owned by another user) are refused with exit 1 within
// refuseGuard, the exact "permission denied" error naming the path, and a
// FAILED sentinel. Root reads any file, so avenor runs as uid 65534 here
// (a copy of avenor and the scripted plugin it can reach, a world it owns);
// without root the test skips.
func TestUnreadableFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: avenor runs as uid 65534 so that mode 000 stops its reads (root reads any file)")
	}
	t.Parallel()
	pub := otherUIDBinaries(t)
	// unreadable writes a root-owned file that uid 65534 cannot read.
	unreadable := func(w *world, name, content string) string {
		p := w.writeFile(name, content)
		if err := os.Chmod(p, 0); err != nil {
			w.t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name  string
		setup func(w *world) []string
		msg   string // stderr after "avenor: "; "<root>" is the world's root
	}{
		{"prompt file mode 000", func(w *world) []string {
			return []string{"--backend", "scripted", "--prompt-file", unreadable(w, "p.md", "say hi")}
		}, "--prompt-file: open <root>/p.md: permission denied"},
		{"prompt file in a 0700 directory", func(w *world) []string {
			p := w.writeFile("private/p.md", "say hi")
			if err := os.Chmod(filepath.Dir(p), 0o700); err != nil {
				w.t.Fatal(err)
			}
			return []string{"--backend", "scripted", "--prompt-file", p}
		}, "--prompt-file: open <root>/private/p.md: permission denied"},
		{"loop file mode 000", func(w *world) []string {
			return []string{"--backend", "scripted", "--loop-file", unreadable(w, "loop.json", `{"loop":[{"name":"l","prompt":"say hi"}]}`)}
		}, "load loop config: loop config: open <root>/loop.json: permission denied"},
		{"loop phase prompt_file mode 000", func(w *world) []string {
			unreadable(w, "phase.md", "say hi")
			return []string{"--backend", "scripted", "--loop-file", w.writeFile("loop.json", `{"loop":[{"name":"l","prompt_file":"phase.md"}]}`)}
		}, `load loop config: loop config: phase[name l]: reading prompt_file "phase.md": open <root>/phase.md: permission denied`},
		{"team file mode 000", func(w *world) []string {
			return []string{"--backend", "scripted", "--team-file", unreadable(w, "team.json", `{"team":[{"name":"a","prompt":"say hi"}]}`)}
		}, "load team config: team config: open <root>/team.json: permission denied"},
		{"roster file mode 000", func(w *world) []string {
			return []string{"--roster-file", unreadable(w, "roster.json", `{"x":{"backend":"scripted","model":"m"}}`), "--roster-entry", "x", "--prompt", "say hi"}
		}, "--roster-file <root>/roster.json: open <root>/roster.json: permission denied"},
		{"user config mode 000", func(w *world) []string {
			unreadable(w, "config/avenor/config.toml", "backend = \"scripted\"\n")
			return []string{"--backend", "scripted", "--prompt", "say hi"}
		}, "config <root>/config/avenor/config.toml: open <root>/config/avenor/config.toml: permission denied"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			giveWorld(t, w)
			args := append(tc.setup(w), "--dir", w.work, "--sentinel-file", w.path("run.done"), "--run-id", "u")
			res := runAs(t, w, pub, args...)
			checkRefusal(t, res, strings.ReplaceAll(tc.msg, "<root>", w.root))
			checkSentinel(t, w.path("run.done"), validationSentinel(tc.msg, "u"))
		})
	}
}

// otherUIDBinaries copies avenor and the scripted plugin where otherUID can
// run them (the harness's copies live under 0700 temporary directories).
func otherUIDBinaries(t *testing.T) string {
	t.Helper()
	pub, err := os.MkdirTemp("", "avpub")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pub) })
	if err := os.Chmod(pub, 0o755); err != nil {
		t.Fatal(err)
	}
	if dir := untraversable(filepath.Dir(pub)); dir != "" {
		t.Skipf("uid %d cannot pass through %s (no o+x), which holds $TMPDIR; use a TMPDIR under /tmp", otherUID, dir)
	}
	scripted, err := filepath.EvalSymlinks(filepath.Join(bins.pluginDir, "avenor-plugin-scripted"))
	if err != nil {
		t.Fatal(err)
	}
	for src, name := range map[string]string{bins.avenor: "avenor", scripted: "avenor-plugin-scripted"} {
		if err := copyExecutable(src, filepath.Join(pub, name)); err != nil {
			t.Fatal(err)
		}
	}
	return pub
}

// giveWorld hands the world's directories to otherUID and opens the
// directories above its root for it to pass through.
func giveWorld(t *testing.T, w *world) {
	t.Helper()
	for _, root := range []string{w.root, w.tmp} {
		err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, otherUID, otherUID)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Dir(w.root), 0o711); err != nil { // t.TempDir's per-test parent
		t.Fatal(err)
	}
}

// runAs runs pub's avenor as otherUID in w, its plugins from pub only.
func runAs(t *testing.T, w *world, pub string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runGuard)
	defer cancel()
	c := exec.CommandContext(ctx, filepath.Join(pub, "avenor"), args...)
	c.Dir = w.work
	c.Env = append(append([]string{}, w.env...), "AVENOR_PLUGIN_PATH="+pub)
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUID, Gid: otherUID}}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	start := time.Now()
	err := c.Run()
	if c.ProcessState == nil {
		t.Fatalf("starting avenor as uid %d: %v", otherUID, err)
	}
	return result{code: c.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
}
