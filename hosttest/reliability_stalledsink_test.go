//go:build reliability

package hosttest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	hostevent "github.com/avenor-go/avenor/host/event"
)

// An event log that blocks or fails. A named pipe
// or device is refused before it is opened; a regular file whose writes
// fail, or block past hostevent.MaxWriteStall, ends the run FAILED with a
// sentinel, and control and signals keep working meanwhile.

// TestReliabilityStalledSinkRefused: --on-event naming a FIFO (nobody
// reading, or a reader that never reads) or a device is refused at once
// as a validation error (docs/run.md#validation: exit 1, FAILED sentinel). A FIFO used to
// block avenor for ever — in open(2), or once the pipe filled — deaf to
// SIGTERM and --timeout, and /dev/full ended DONE with no log at all.
func TestReliabilityStalledSinkRefused(t *testing.T) {
	t.Parallel()
	const notFile = ", not a regular file; give the path of a file"
	cases := []struct {
		name  string
		setup func(w *world) string // the --on-event path
		is    string
	}{
		{"FIFO without a reader", func(w *world) string { return fifo(w, "ev.fifo") }, "a named pipe (FIFO)"},
		{"FIFO whose reader never reads", func(w *world) string {
			p := fifo(w, "ev.fifo")
			r, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				w.t.Fatal(err)
			}
			w.t.Cleanup(func() { r.Close() })
			return p
		}, "a named pipe (FIFO)"},
		{"/dev/full", func(*world) string { return "/dev/full" }, "a character device"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			path := tc.setup(w)
			sent := w.path("s.done")
			res := w.run("--backend", "scripted", "--dir", w.work, "--prompt", "flood 20000", "--on-event", path,
				"--sentinel-file", sent, "--timeout", "5s", "--run-id", "b")
			checkRefusal(t, res, "--on-event: "+path+" is "+tc.is+notFile)
			checkSentinel(t, sent, "FAILED\nSESSION=\nSTOP_REASON=exit_1\nEXIT_CODE=1\nRUN=b\n")
		})
	}
	// /dev/null alone among devices is taken: harnesses pass it to discard
	// the log, and it can neither block nor fail.
	t.Run("/dev/null is taken", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		sent := w.path("s.done")
		res := w.run("--backend", "scripted", "--dir", w.work, "--prompt", "flood 2000", "--on-event", "/dev/null",
			"--sentinel-file", sent, "--timeout", "20s", "--run-id", "n")
		if res.code != 0 || res.stderr != "" {
			t.Fatalf("--on-event /dev/null: %v", res)
		}
		if b := readFile(t, sent); !strings.HasPrefix(b, "DONE\n") {
			t.Fatalf("sentinel %q, want DONE", b)
		}
	})
}

// TestReliabilityStalledSinkWriteFails: a regular file whose writes fail
// part way (RLIMIT_FSIZE: write(2) returns EFBIG past 64 KiB) ends the run
// FAILED, exit 1, with the cause on stderr, instead of DONE over a log
// missing most of its lines.
func TestReliabilityStalledSinkWriteFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, prompt string }{
		{"during a flood", "flood 20000"},
		// One line a write, as a runtime streams.
		{"line by line", `chunks 300 every=1ms text="` + strings.Repeat("y", 400) + `"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			ev, sent := w.path("ev.ndjson"), w.path("s.done")
			res := w.runLimited(64, "--backend", "scripted", "--dir", w.work, "--prompt", tc.prompt,
				"--on-event", ev, "--sentinel-file", sent, "--run-id", "b")
			if res.code != 1 {
				t.Fatalf("exit %d, want 1 (a log that could not be written completely); %v", res.code, res)
			}
			const says = "avenor: the event log is incomplete, the run is ended: "
			if !strings.Contains(res.stderr, says) || !strings.Contains(res.stderr, "file too large") ||
				!strings.Contains(res.stderr, ev) {
				t.Errorf("stderr = %q, want %q naming %s and the cause (file too large)", res.stderr, says, ev)
			}
			if n := strings.Count(res.stderr, says); n != 1 {
				t.Errorf("the failure was told %d times on stderr, want once: %q", n, res.stderr)
			}
			got := readFile(t, sent)
			if !strings.HasPrefix(got, "FAILED\n") || !strings.Contains(got, "\nSTOP_REASON=error\nEXIT_CODE=1\nRUN=b\n") {
				t.Errorf("sentinel = %q, want FAILED, STOP_REASON=error, EXIT_CODE=1", got)
			}
			if fi, err := os.Stat(ev); err != nil || fi.Size() > 64<<10 {
				t.Errorf("log: %v %v, want at most the 64 KiB limit", fi, err)
			}
		})
	}
}

// runLimited runs avenor with its file size limit at kib KiB (ulimit -f)
// and SIGXFSZ ignored, so a write past it fails with EFBIG.
func (w *world) runLimited(kib int, args ...string) result {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runGuard)
	defer cancel()
	shArgs := append([]string{"-c", `trap '' XFSZ; ulimit -f "$1"; shift; exec "$@"`, "sh", strconv.Itoa(kib), bins.avenor}, args...)
	cmd := exec.CommandContext(ctx, "/bin/sh", shArgs...)
	cmd.Dir = w.work
	cmd.Env = w.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		w.t.Fatalf("running avenor under ulimit -f: %v", err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
}

// TestReliabilityStalledSinkStable: a spawn whose on_event is a FIFO is
// refused at once as invalid params naming the path; list answers and
// other runtimes run. It used to block the spawn in open(2) for ever.
func TestReliabilityStalledSinkStable(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.startStable("sink", nil)
	c := s.client()
	for _, path := range []string{fifo(w, "rt.fifo"), "/dev/full"} {
		start := time.Now()
		_, err := spawnRaw(t, c, map[string]any{"backend": "scripted", "dir": w.work, "prompt": "flood 20000", "on_event": path})
		if err == nil || !strings.Contains(err.Error(), "on_event: "+path+" is ") ||
			!strings.Contains(err.Error(), ", not a regular file; give the path of a file") || !strings.Contains(err.Error(), "-32602") {
			t.Errorf("spawn with on_event %s: %v; want invalid params (-32602) saying it is not a regular file", path, err)
		}
		if d := time.Since(start); d > refuseGuard {
			t.Errorf("spawn with on_event %s took %v to refuse", path, d)
		}
	}
	ctx := ctxT(t, 5*time.Second)
	if _, err := c.List(ctx); err != nil {
		t.Fatalf("list after the refused spawns: %v", err)
	}
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say still serving"})
	waitEnded(t, c, sp.RuntimeID, 20*time.Second)
}

// frozenDisk is an ext4 file system on a loop device that a test can
// freeze (fsfreeze): every write(2) to it then blocks in the kernel until
// it thaws — a genuinely stalled regular file, like a hung NFS server.
type frozenDisk struct {
	t      *testing.T
	mnt    string
	frozen bool
}

// newFrozenDisk mounts the file system, or skips the test where that
// needs what the machine lacks (root, loop devices, mkfs.ext4, fsfreeze).
func newFrozenDisk(t *testing.T, w *world) *frozenDisk {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a frozen file system needs root")
	}
	for _, tool := range []string{"mkfs.ext4", "fsfreeze", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("a frozen file system needs %s: %v", tool, err)
		}
	}
	img, mnt := w.path("disk.img"), w.path("disk")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 64<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", img).CombinedOutput(); err != nil {
		t.Skipf("mkfs.ext4: %v %s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Skipf("mount -o loop: %v %s", err, out)
	}
	d := &frozenDisk{t: t, mnt: mnt}
	t.Cleanup(func() {
		d.thaw()
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", mnt, err, out)
		}
	})
	return d
}

func (d *frozenDisk) path(name string) string { return filepath.Join(d.mnt, name) }

// freeze freezes the file system; the test's cleanups thaw it before they
// wait for its processes.
func (d *frozenDisk) freeze() {
	d.t.Helper()
	if out, err := exec.Command("fsfreeze", "-f", d.mnt).CombinedOutput(); err != nil {
		d.t.Skipf("fsfreeze -f: %v %s", err, out)
	}
	d.frozen = true
	d.t.Cleanup(d.thaw)
}

func (d *frozenDisk) thaw() {
	if d.frozen {
		d.frozen = false
		if out, err := exec.Command("fsfreeze", "-u", d.mnt).CombinedOutput(); err != nil {
			d.t.Errorf("fsfreeze -u %s: %v %s", d.mnt, err, out)
		}
	}
}

// stallGuard: how long after its log froze a run may take to write its
// sentinel (the stall bound, plus the time to end the turn).
const stallGuard = hostevent.MaxWriteStall + 15*time.Second

// TestReliabilityStalledSinkFrozenDisk: the --on-event file's disk freezes
// mid-run. Control (status, history) answers during the stall; the run
// ends after hostevent.MaxWriteStall with a FAILED sentinel and the cause on
// stderr — by itself, or after SIGTERM, which is not ignored. Its main
// thread exits while the write is still stuck: only the thread inside the
// kernel's write(2) is left, which the kernel itself holds until the disk
// thaws (uninterruptible, even for SIGKILL). It used to wedge for good:
// no sentinel, SIGTERM and --timeout ignored, history hung.
func TestReliabilityStalledSinkFrozenDisk(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		sigterm bool
	}{{"stall bound", false}, {"SIGTERM", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			disk := newFrozenDisk(t, w)
			ev, sent, sock := disk.path("ev.ndjson"), w.path("s.done"), filepath.Join(w.tmp, "run.sock")
			// ~1000 events/s: the 1 MiB queue fills within seconds of the
			// freeze, so Writes wait for room too.
			p := w.start(nil, "--backend", "scripted", "--dir", w.work, "--prompt", "chunks 1000000 every=1ms",
				"--on-event", ev, "--sentinel-file", sent, "--control-socket", sock, "--run-id", "b", "--timeout", "5m")
			if !waitFor(20*time.Second, func() bool { fi, err := os.Stat(ev); return err == nil && fi.Size() > 0 }) {
				t.Fatalf("no event reached the log: %s", p.stderr.String())
			}
			var c *client.Client
			if !waitFor(10*time.Second, func() bool {
				var err error
				c, err = client.Dial(context.Background(), sock)
				return err == nil
			}) {
				t.Fatal("control socket did not answer")
			}
			defer c.Close()
			disk.freeze()
			frozeAt := time.Now()

			// Control keeps answering, before and after the queue is full
			// (~5s in), while the run waits out the stall bound.
			for _, at := range []time.Duration{time.Second, 2 * time.Second, 7 * time.Second} {
				time.Sleep(time.Until(frozeAt.Add(at)))
				ctx := ctxT(t, 2*time.Second)
				if _, err := c.Status(ctx); err != nil {
					t.Fatalf("status %v after the freeze: %v", at, err)
				}
				if _, err := c.History(ctx, client.HistoryOptions{Limit: 5}); err != nil {
					t.Fatalf("history %v after the freeze: %v", at, err)
				}
			}
			if tc.sigterm {
				p.signal(syscall.SIGTERM)
			}
			if !waitFor(stallGuard, func() bool { _, err := os.Stat(sent); return err == nil }) {
				t.Fatalf("no sentinel %v after the log froze", stallGuard)
			}
			// The log lacks its last lines, session.end among them: FAILED,
			// whatever ended the run.
			got := readFile(t, sent)
			if !strings.HasPrefix(got, "FAILED\n") || !strings.Contains(got, "\nSTOP_REASON=error\nEXIT_CODE=1\nRUN=b\n") {
				t.Errorf("sentinel = %q, want FAILED, STOP_REASON=error, EXIT_CODE=1", got)
			}
			if d := time.Since(frozeAt); !tc.sigterm && d < hostevent.MaxWriteStall-time.Second {
				t.Errorf("the run ended %v after the freeze, before the stall bound %v", d, hostevent.MaxWriteStall)
			}
			// avenor has exited but for the thread stuck in write(2): its
			// main thread is a zombie until the disk thaws.
			if !waitFor(10*time.Second, func() bool { return procState(p.pid()) == "Z" }) {
				t.Errorf("avenor (state %q) did not exit after its sentinel while its log write was stuck", procState(p.pid()))
			}
			disk.thaw()
			res := p.wait()
			if res.code != 1 {
				t.Errorf("exit %d, want 1; %v", res.code, res)
			}
			if !strings.Contains(res.stderr, "avenor: the event log is incomplete, the run is ended: event log stalled: a write to the event log has not returned for 10s") {
				t.Errorf("stderr = %q, want the stall named", res.stderr)
			}
		})
	}
}

// TestReliabilityStalledSinkFrozenDiskStable: one stable runtime's
// on_event disk freezes. list, cancel, spawn and other runtimes go on
// meanwhile; that runtime ends FAILED with its sentinel after the stall
// bound; a graceful shutdown finishes. (In stable a stalled on_event used
// to hang list, cancel and shutdown for good.)
func TestReliabilityStalledSinkFrozenDiskStable(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	disk := newFrozenDisk(t, w)
	s := w.startStable("frozen", nil)
	c := s.client()
	ev, sent := disk.path("rt1.ndjson"), w.path("rt1.done")
	stalled := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "chunks 1000000 every=1ms",
		OnEvent: ev, SentinelFile: sent})
	if !waitFor(20*time.Second, func() bool { fi, err := os.Stat(ev); return err == nil && fi.Size() > 0 }) {
		t.Fatalf("no event reached %s", ev)
	}
	disk.freeze()
	frozeAt := time.Now()
	answers := func(what string, f func(context.Context) error) {
		t.Helper()
		start := time.Now()
		if err := f(ctxT(t, 3*time.Second)); err != nil {
			t.Fatalf("%s %v after the freeze: %v", what, time.Since(frozeAt).Round(time.Second), err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s took %v while a runtime's log was stalled", what, d)
		}
	}
	list := func(ctx context.Context) error { _, err := c.List(ctx); return err }
	answers("list", list)
	other := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say the others run"})
	waitEnded(t, c, other.RuntimeID, 20*time.Second)
	time.Sleep(time.Until(frozeAt.Add(7 * time.Second))) // the stalled runtime's queue is full by now
	answers("list", list)
	answers("cancel", func(ctx context.Context) error { return c.Cancel(ctx, stalled.RuntimeID) })
	if !waitFor(stallGuard, func() bool { _, err := os.Stat(sent); return err == nil }) {
		t.Fatalf("no sentinel for %s %v after its log froze", stalled.RuntimeID, stallGuard)
	}
	if got := readFile(t, sent); !strings.HasPrefix(got, "FAILED\n") || !strings.Contains(got, "\nSTOP_REASON=error\nEXIT_CODE=1\n") {
		t.Errorf("sentinel of %s = %q, want FAILED, STOP_REASON=error, EXIT_CODE=1", stalled.RuntimeID, got)
	}
	answers("list", list)
	start := time.Now()
	if err := c.Shutdown(ctxT(t, 30*time.Second), "graceful"); err != nil {
		t.Fatalf("graceful shutdown with a stalled runtime: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("graceful shutdown took %v", d)
	}
	disk.thaw()
	s.exited(0, 30*time.Second)
}
