package hosttest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSentinelOnFullDisk: a run whose sentinel cannot be written because its
// file system is full (ENOSPC, on a one-page tmpfs filled to the last byte)
// does not exit 0 — a harness waiting for the sentinel would never see it
// end — and says on stderr why; no temporary file is left behind. A one-shot
// run and a loop run write their sentinel on different paths; both are
// checked.
func TestSentinelOnFullDisk(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args func(w *world) []string
	}{
		{"one-shot", func(*world) []string { return []string{"--prompt", "say hi"} }},
		{"loop", func(w *world) []string {
			return []string{"--loop-file", w.writeConfig("loop.json", map[string]any{
				"max_iterations": 1, "loop": []phase{{"name": "only", "prompt": `say "done\n"`}},
			})}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			disk := fullTmpfs(t, w)
			sentPath := filepath.Join(disk, "run.done")
			args := append([]string{"--backend", "scripted", "--on-event", w.path("events.ndjson"),
				"--sentinel-file", sentPath}, c.args(w)...)
			res := w.run(args...)
			if res.code != 1 {
				t.Errorf("a run whose sentinel could not be written exited %d, want 1: %v", res.code, res)
			}
			for _, want := range []string{"avenor: writing sentinel", sentPath, "no space left on device", "sentinel was not written; exit 1"} {
				if !strings.Contains(res.stderr, want) {
					t.Errorf("stderr does not say %q: %v", want, res)
				}
			}
			// The run itself ended well: the log says so, only the sentinel is missing.
			ends := only(readEvents(t, w.path("events.ndjson")), "session.end")
			if len(ends) == 0 || ends[len(ends)-1].str("stop_reason") != "end_turn" {
				t.Errorf("the log's session.end events %v do not end with end_turn", ends)
			}
			left, err := os.ReadDir(disk)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range left {
				if e.Name() != "filler" {
					t.Errorf("the full disk holds %s after the run; only the filler belongs there", e.Name())
				}
			}
		})
	}
}

// fullTmpfs mounts a one-page tmpfs under w, fills it until a write fails
// with ENOSPC and returns its path; the test's cleanup unmounts it. Mounting
// needs root (with the right to mount): without it the test skips, unless
// AVENOR_REQUIRE_ROOT=1 (CI), where it fails.
func fullTmpfs(t *testing.T, w *world) string {
	t.Helper()
	cannot := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("AVENOR_REQUIRE_ROOT") == "1" {
			t.Fatalf("AVENOR_REQUIRE_ROOT=1, but "+format, args...)
		}
		t.Skipf(format+" (AVENOR_REQUIRE_ROOT=1 makes this a failure)", args...)
	}
	if os.Geteuid() != 0 {
		cannot("mounting a full tmpfs needs root")
	}
	mnt := w.path("full")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4k,mode=0755", "tmpfs", mnt).CombinedOutput(); err != nil {
		cannot("mount a 4k tmpfs on %s: %v %s", mnt, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", mnt, err, out)
		}
	})
	f, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 512)
	for i := 0; ; i++ {
		if _, err := f.Write(page); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the tmpfs: %v", err)
			}
			break
		}
		if i > 1<<10 {
			t.Fatal("a 4k tmpfs took 512 KiB without filling up")
		}
	}
	return mnt
}
