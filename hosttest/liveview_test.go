package hosttest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyRun is an avenor whose stderr is a real pseudo-terminal, as a person's
// shell gives it; stdout is a pipe, so the test sees that it stays empty.
type ptyRun struct {
	t      *testing.T
	cmd    *exec.Cmd
	ptmx   *os.File // the person's side: type writes to the child's stdin when it is the terminal
	stdout bytes.Buffer
	mu     sync.Mutex
	screen bytes.Buffer // everything written to the terminal
	read   chan struct{}
}

func (w *world) startPTY(extraEnv []string, args ...string) *ptyRun {
	w.t.Helper()
	return w.startPTYWith(false, extraEnv, args...)
}

// startPTYWith is startPTY; with stdin the child's stdin is the terminal
// too, and type sends it lines.
func (w *world) startPTYWith(stdin bool, extraEnv []string, args ...string) *ptyRun {
	w.t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		w.t.Fatalf("opening a pty: %v", err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 160}); err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), runGuard)
	r := &ptyRun{t: w.t, read: make(chan struct{}), ptmx: ptmx}
	r.cmd = exec.CommandContext(ctx, bins.avenor, args...)
	r.cmd.Dir = w.work
	r.cmd.Env = append(append([]string{}, w.env...), extraEnv...)
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, tty
	if stdin {
		r.cmd.Stdin = tty
	}
	r.cmd.WaitDelay = 5 * time.Second
	if err := r.cmd.Start(); err != nil {
		cancel()
		w.t.Fatalf("starting avenor: %v", err)
	}
	tty.Close() // the child holds its own copy
	go func() {
		defer close(r.read)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			r.mu.Lock()
			r.screen.Write(buf[:n])
			r.mu.Unlock()
			if err != nil { // EIO once the child's side is closed
				return
			}
		}
	}()
	w.t.Cleanup(func() {
		cancel()
		_ = r.cmd.Wait()
		ptmx.Close()
		<-r.read
	})
	return r
}

// typeLine types s and Enter at the terminal.
func (r *ptyRun) typeLine(s string) {
	r.t.Helper()
	if _, err := r.ptmx.Write([]byte(s + "\r")); err != nil {
		r.t.Fatalf("typing %q: %v", s, err)
	}
}

// waitFor waits until the terminal shows want.
func (r *ptyRun) waitFor(want string, d time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if strings.Contains(r.text(), want) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.t.Fatalf("the terminal never showed %q; it shows:\n%s", want, r.text())
}

func (r *ptyRun) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.screen.String()
}

// wait waits for avenor to exit and for the terminal to be read out.
func (r *ptyRun) wait() int {
	r.t.Helper()
	err := r.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		r.t.Fatalf("waiting for avenor: %v", err)
	}
	select {
	case <-r.read:
	case <-time.After(5 * time.Second):
	}
	return r.cmd.ProcessState.ExitCode()
}

// TestLiveViewOnTerminal drives the built avenor with stderr on a real
// pseudo-terminal: the live view shows the streamed text, a tool call and its
// completion, a permission request with the command that answers it (which
// the test then runs), the answer, and the end summary; stdout stays empty
// and the event log is what it always was.
func TestLiveViewOnTerminal(t *testing.T) {
	w := newWorld(t)
	sentinel := w.path("run.done")
	log := w.path("ev.ndjson")
	script := "say \"Hello from the script\\n\"\ntool \"ls -la\" kind=execute\npermission tool=bash question=\"Run make?\"\nsay \"made it\\n\"\nusage in=7 out=9"
	r := w.startPTY([]string{"NO_COLOR=1"}, "--backend", "scripted", "--prompt", script,
		"--on-event", log, "--sentinel-file", sentinel)
	answer := "avenor answer --option allow " + w.path("run.perm")
	r.waitFor(answer, 20*time.Second)
	// The event comes first; the file handler writes the .req just after.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(w.path("run.perm.req")); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if res := w.run("answer", "--option", "allow", w.path("run.perm")); res.code != 0 {
		t.Fatalf("avenor answer: %v", res)
	}
	if code := r.wait(); code != 0 {
		t.Fatalf("exit %d; terminal:\n%s", code, r.text())
	}
	screen := r.text()
	for _, want := range []string{
		"● scripted",
		"Hello from the script",
		"▸ ls -la [execute]",
		"✓ ls -la",
		"? permission ",
		"Run make?",
		"options: allow: Allow once, deny: Reject",
		answer,
		"✓ allowed: allow by file",
		"made it",
		"■ end_turn · exit 0 · ",
		"7 in / 9 out tokens",
		"log " + log,
		"sentinel " + sentinel,
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the live view lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "\x1b[3") {
		t.Errorf("NO_COLOR is set but the view is coloured:\n%q", screen)
	}
	if r.stdout.Len() != 0 {
		t.Errorf("stdout = %q, want nothing", r.stdout.String())
	}
	evs := readEvents(t, log)
	if got := lastSessionEnd(t, evs).str("stop_reason"); got != "end_turn" {
		t.Errorf("stop_reason = %q", got)
	}
}

// TestLiveViewEchoOnTerminal: `avenor --backend echo --prompt hello`, the
// first thing a new user types, says something on a terminal.
func TestLiveViewEchoOnTerminal(t *testing.T) {
	w := newWorld(t)
	r := w.startPTY(nil, "--backend", "echo", "--prompt", "hello")
	if code := r.wait(); code != 0 {
		t.Fatalf("exit %d; terminal:\n%s", code, r.text())
	}
	screen := r.text()
	for _, want := range []string{"hello", "measure the prompt", "■ end_turn · exit 0"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the live view lacks %q:\n%q", want, screen)
		}
	}
	if !strings.Contains(screen, "\x1b[") {
		t.Errorf("no colour without NO_COLOR:\n%q", screen)
	}
}

// TestLiveViewOffWithoutTerminal: with stderr a pipe (the harness case)
// nothing is printed, and --progress / --quiet choose a mode explicitly.
func TestLiveViewOffWithoutTerminal(t *testing.T) {
	w := newWorld(t)
	script := "say hi\ntool \"ls\" kind=execute"
	if res := w.run("--backend", "scripted", "--prompt", script); res.code != 0 || res.stderr != "" || res.stdout != "" {
		t.Errorf("no terminal: %v; want exit 0 and nothing on stdout or stderr", res)
	}
	res := w.run("--backend", "scripted", "--prompt", script, "--progress=plain")
	if res.code != 0 || res.stdout != "" || !strings.Contains(res.stderr, "agent: hi\n") || !strings.Contains(res.stderr, "▸ ls [execute]\n") ||
		!strings.Contains(res.stderr, "■ end_turn · exit 0") || strings.Contains(res.stderr, "\x1b") {
		t.Errorf("--progress=plain: %v", res)
	}
	if res := w.run("--backend", "scripted", "--prompt", "say hi", "--progress=plain", "--quiet"); res.code != 1 ||
		!strings.Contains(res.stderr, "--quiet and --progress=plain are mutually exclusive") {
		t.Errorf("--quiet with --progress=plain: %v", res)
	}
	r := w.startPTY(nil, "--backend", "scripted", "--prompt", script, "--quiet")
	if code := r.wait(); code != 0 || r.text() != "" {
		t.Errorf("--quiet on a terminal: exit %d, terminal %q; want nothing", code, r.text())
	}
}
