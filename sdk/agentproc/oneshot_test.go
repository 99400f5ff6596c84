package agentproc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRunStatusOutputBound(t *testing.T) {
	for _, n := range []int{MaxStatusOutput, MaxStatusOutput + 1} {
		res, err := RunStatus(context.Background(), "sh", []string{"-c", "head -c " + strconv.Itoa(n) + " /dev/zero; echo err >&2; exit 3"}, os.Environ())
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Stdout) != min(n, MaxStatusOutput) || res.Truncated != (n > MaxStatusOutput) || res.ExitCode != 3 || string(res.Stderr) != "err\n" {
			t.Errorf("%d bytes: kept %d, truncated %v, exit %d, stderr %q", n, len(res.Stdout), res.Truncated, res.ExitCode, res.Stderr)
		}
	}
}

// TestRunStatusKillsItsGroup: a status command that outlives its bound is
// killed with the children it started, and the error says it timed out.
func TestRunStatusKillsItsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := RunStatus(ctx, "sh", []string{"-c", "sleep 60 & echo $! > " + pidFile + "; wait"}, os.Environ())
	if !errors.Is(err, ErrStatusTimeout) || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 {
		t.Fatalf("no child pid: %q", b)
	}
	deadline := time.Now().Add(2 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("child %d outlived its status command", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := RunStatus(context.Background(), "avenor-no-such-binary", nil, nil); err == nil {
		t.Error("a missing binary is not an error")
	}
}
