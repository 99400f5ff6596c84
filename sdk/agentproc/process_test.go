package agentproc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"
)

// startSh starts /bin/sh -c script and stops it when the test ends.
func startSh(t *testing.T, spec Spec, script string) *Process {
	t.Helper()
	spec.Path = "/bin/sh"
	spec.Args = []string{"-c", script}
	p, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { p.Stop(0) })
	return p
}

// nextLine receives one line, failing the test if Lines is closed or silent.
func nextLine(t *testing.T, p *Process) Line {
	t.Helper()
	select {
	case l, ok := <-p.Lines():
		if !ok {
			t.Fatal("Lines closed early")
		}
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no line within 10s")
	}
	panic("unreachable")
}

// allLines receives until Lines is closed.
func allLines(t *testing.T, p *Process) []Line {
	t.Helper()
	var lines []Line
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-p.Lines():
			if !ok {
				return lines
			}
			lines = append(lines, l)
		case <-timeout:
			t.Fatalf("Lines not closed within 10s; got %d lines", len(lines))
		}
	}
}

func waitDone(t *testing.T, p *Process, within time.Duration) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(within):
		t.Fatalf("process not done within %s", within)
	}
}

// waitGone waits until pid no longer exists. A zombie counts as gone: once
// its parent is killed it is reparented to pid 1, which in some containers
// never reaps, and kill(pid, 0) keeps succeeding on it.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		if stat, rerr := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); rerr == nil {
			// pid (comm) state ...; comm may contain spaces but not ") ".
			if i := bytes.LastIndex(stat, []byte(") ")); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still alive (kill: %v)", pid, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestProcessOutput(t *testing.T) {
	tests := []struct {
		name      string
		script    string
		stdin     string
		wantLines []string
		wantCode  int
		wantTail  string
	}{
		{"crlf and final line", `printf 'a\r\nb\n\nc'`, "", []string{"a", "b", "", "c"}, 0, ""},
		{"exit status and stderr", `echo out; echo err >&2; exit 3`, "", []string{"out"}, 3, "err\n"},
		{"reads stdin", `read x; echo "got $x"`, "hi\n", []string{"got hi"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startSh(t, Spec{}, tt.script)
			if tt.stdin != "" {
				if _, err := p.Stdin().Write([]byte(tt.stdin)); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for _, l := range allLines(t, p) {
				if l.Err != nil {
					t.Fatalf("line error: %v", l.Err)
				}
				got = append(got, string(l.Data))
			}
			if strings.Join(got, "|") != strings.Join(tt.wantLines, "|") || len(got) != len(tt.wantLines) {
				t.Fatalf("lines = %q, want %q", got, tt.wantLines)
			}
			waitDone(t, p, 5*time.Second)
			var exitErr *exec.ExitError
			switch err := p.ExitErr(); {
			case tt.wantCode == 0 && err != nil:
				t.Fatalf("ExitErr = %v, want nil", err)
			case tt.wantCode != 0 && (!errors.As(err, &exitErr) || exitErr.ExitCode() != tt.wantCode):
				t.Fatalf("ExitErr = %v, want exit status %d", err, tt.wantCode)
			case tt.wantCode != 0 && !strings.Contains(err.Error(), "/bin/sh"):
				t.Fatalf("ExitErr %q does not name the CLI", err)
			}
			if got := p.StderrTail(); got != tt.wantTail {
				t.Fatalf("StderrTail = %q, want %q", got, tt.wantTail)
			}
			if err := p.Stop(time.Second); err != nil {
				t.Fatalf("Stop after exit = %v, want nil", err)
			}
		})
	}
}

func TestProcessHugeLine(t *testing.T) {
	p := startSh(t, Spec{}, `head -c 100000000 /dev/zero | tr '\0' a; echo; echo ok`)
	lines := allLines(t, p)
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want an error and ok: %+v", len(lines), lines)
	}
	var tl *LineTooLongError
	if !errors.As(lines[0].Err, &tl) || tl.Size != 100_000_000 || tl.Limit != DefaultMaxLineBytes || lines[0].Data != nil {
		t.Fatalf("first line = %+v, want a LineTooLongError of 100000000 bytes", lines[0])
	}
	if lines[1].Err != nil || string(lines[1].Data) != "ok" {
		t.Fatalf("second line = %+v, want ok", lines[1])
	}
	waitDone(t, p, 5*time.Second)
	if err := p.ExitErr(); err != nil {
		t.Fatalf("ExitErr = %v", err)
	}
}

func TestStop(t *testing.T) {
	const grace = 200 * time.Millisecond
	tests := []struct {
		name          string
		script        string
		waitExit      bool  // let the CLI exit before stopping it
		want          error // nil, ErrTerminated or ErrKilled
		hasGrandchild bool  // the first line is the pid of a grandchild in the group
	}{
		{"exited before stop", `true`, true, nil, false},
		{"exits on stdin close", `echo ready; cat >/dev/null`, false, nil, false},
		{"exits on SIGTERM", `echo ready; exec sleep 100`, false, ErrTerminated, false},
		{"ignores SIGTERM, with grandchild", `trap '' TERM; sleep 100 & echo $!; sleep 100`, false, ErrKilled, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startSh(t, Spec{}, tt.script)
			grandchild := 0
			if tt.waitExit {
				waitDone(t, p, 5*time.Second)
			} else {
				l := nextLine(t, p)
				if tt.hasGrandchild {
					var err error
					if grandchild, err = strconv.Atoi(string(l.Data)); err != nil {
						t.Fatalf("grandchild pid line %q: %v", l.Data, err)
					}
				}
			}

			// Concurrent calls share one stop and one result.
			var wg sync.WaitGroup
			errs := make([]error, 3)
			for i := range errs {
				wg.Go(func() { errs[i] = p.Stop(grace) })
			}
			wg.Wait()
			for _, err := range errs {
				if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
					t.Fatalf("Stop = %v, want %v", err, tt.want)
				}
			}
			if err := p.Stop(grace); err != errs[0] {
				t.Fatalf("second Stop = %v, want %v", err, errs[0])
			}

			select {
			case <-p.Done():
			default:
				t.Fatal("Done not closed after Stop")
			}
			if _, ok := <-p.Lines(); ok {
				t.Fatal("Lines not closed after Stop")
			}
			if err := syscall.Kill(p.PID(), 0); !errors.Is(err, syscall.ESRCH) {
				t.Fatalf("kill(pid, 0) after Stop = %v, want ESRCH: not reaped", err)
			}
			if grandchild != 0 {
				waitGone(t, grandchild)
			}
		})
	}
}

// A helper the CLI left behind holding stdout must not keep Lines and Done
// open; Stop then kills it.
func TestLeftoverHoldingPipes(t *testing.T) {
	p := startSh(t, Spec{}, `sleep 100 & echo $!`)
	leftover, err := strconv.Atoi(string(nextLine(t, p).Data))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if rest := allLines(t, p); len(rest) != 0 {
		t.Fatalf("unexpected lines %+v", rest)
	}
	waitDone(t, p, 5*time.Second)
	if took := time.Since(start); took > OutputDrainIdle+2*time.Second {
		t.Fatalf("Lines and Done took %s after exit", took)
	}
	if err := p.Stop(time.Second); err != nil {
		t.Fatalf("Stop = %v, want nil: the CLI exited by itself", err)
	}
	waitGone(t, leftover)
}

// Stop releases the goroutines of a Process whose Lines nobody reads.
func TestStopWithLinesUnread(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		waitExit bool
		want     error
	}{
		{"exited with lines pending", `printf 'a\nb\nc\n'`, true, nil},
		{"blocked writing", `seq 1000000`, false, ErrTerminated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startSh(t, Spec{}, tt.script)
			if tt.waitExit {
				waitDone(t, p, 5*time.Second)
			}
			if err := p.Stop(100 * time.Millisecond); tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("Stop = %v, want %v", err, tt.want)
			}
			goleak.VerifyNone(t)
		})
	}
}

func TestContextCancelStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := Start(ctx, Spec{Path: "/bin/sh", Args: []string{"-c", "echo ready; exec sleep 100"}, CancelGrace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	nextLine(t, p)
	cancel()
	waitDone(t, p, 5*time.Second)
	if err := p.ExitErr(); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Fatalf("ExitErr = %v, want killed by SIGTERM", err)
	}
	if err := p.Stop(time.Second); !errors.Is(err, ErrTerminated) {
		t.Fatalf("Stop after cancellation = %v, want the cancellation's ErrTerminated", err)
	}
}

func TestStderrTail(t *testing.T) {
	tests := []struct {
		name      string
		tailBytes int
		script    string
		want      string
	}{
		{"short", 8, `printf hi >&2`, "hi"},
		{"several writes", 8, `printf aaaa >&2; printf bbbbbbbb >&2; printf cccc >&2`, "bbbbcccc"},
		{"one large write", 8, `printf 0123456789abcdefghij >&2`, "cdefghij"},
		{"default bound", 0, `head -c 200000 /dev/zero | tr '\0' x >&2; printf END >&2`,
			strings.Repeat("x", DefaultStderrTailBytes-3) + "END"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startSh(t, Spec{StderrTailBytes: tt.tailBytes}, tt.script)
			waitDone(t, p, 5*time.Second)
			if got := p.StderrTail(); got != tt.want {
				t.Fatalf("StderrTail = %q (%d bytes), want %q", got, len(got), tt.want)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestStderrLogged(t *testing.T) {
	var out syncBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Debug})
	script := `echo 'first complaint' >&2; head -c 70000 /dev/zero | tr '\0' x >&2; echo >&2; echo 'second complaint' >&2`
	p := startSh(t, Spec{Logger: log}, script)
	waitDone(t, p, 5*time.Second)
	got := out.String()
	for _, want := range []string{"first complaint", "second complaint", "stderr line too long to log", "bytes=70000"} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
}

func TestStartErrors(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name     string
		ctx      context.Context
		spec     Spec
		wantIs   error
		wantText []string
	}{
		{"empty path", context.Background(), Spec{}, ErrNoPath, []string{"Spec.Path"}},
		{"not in PATH", context.Background(),
			Spec{Path: "avenor-no-such-cli", InstallHint: "install it with: npm install -g avenor-no-such-cli"},
			exec.ErrNotFound, []string{`"avenor-no-such-cli" not found in PATH`, "npm install -g avenor-no-such-cli"}},
		{"absolute path missing", context.Background(), Spec{Path: "/nonexistent/avenor-cli"},
			exec.ErrNotFound, []string{`"/nonexistent/avenor-cli" not found at that path`, "install it"}},
		{"not executable", context.Background(), Spec{Path: notExec},
			os.ErrPermission, []string{"cannot run runtime CLI", notExec}},
		{"missing dir", context.Background(), Spec{Path: "/bin/sh", Dir: "/nonexistent/dir"},
			os.ErrNotExist, []string{"starting /bin/sh"}},
		{"cancelled context", cancelled, Spec{Path: "/bin/sh"}, context.Canceled, []string{"not starting /bin/sh"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Start(tt.ctx, tt.spec)
			if err == nil {
				p.Stop(0)
				t.Fatal("Start succeeded")
			}
			if !errors.Is(err, tt.wantIs) {
				t.Fatalf("error %q is not %v", err, tt.wantIs)
			}
			for _, want := range tt.wantText {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

func TestKillGroup(t *testing.T) {
	for _, pgid := range []int{-5, 0, 1, syscall.Getpgrp()} {
		if err := KillGroup(pgid); err == nil {
			t.Errorf("KillGroup(%d) = nil, want a refusal", pgid)
		}
	}

	cmd := exec.Command("/bin/sh", "-c", "sleep 100 & exec sleep 100")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	if err := KillGroup(pgid); err != nil {
		t.Fatalf("KillGroup = %v", err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Wait = %v, want killed", err)
	}
	// The group is now empty or holds only a zombie: no error either way.
	if err := KillGroup(pgid); err != nil {
		t.Fatalf("KillGroup of a dead group = %v, want nil", err)
	}
}
