package agentproc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

const watchParentHelperEnv = "AGENTPROC_TEST_WATCHPARENT_DIR"

// watchParentHelper runs in a re-executed test binary whose parent, a shell,
// exits once the helper says it is ready. It writes "orphaned" when
// WatchParent notices.
func watchParentHelper(dir string) int {
	// Capture the parent before saying ready: after that the shell may go.
	ppid := os.Getppid()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
		return 2
	}
	fired := false
	watchParent(ctx, 10*time.Millisecond, ppid, func() {
		fired = true
		_ = os.WriteFile(filepath.Join(dir, "orphaned"), nil, 0o644)
		cancel()
	})
	if !fired {
		return 1
	}
	return 0
}

func TestWatchParentNoticesParentDeath(t *testing.T) {
	dir := t.TempDir()
	// The shell starts the helper in the background, waits until it is
	// watching, and exits, orphaning it.
	script := `"$0" >/dev/null 2>&1 & while [ ! -e "$1/ready" ]; do sleep 0.01; done`
	cmd := exec.Command("/bin/sh", "-c", script, os.Args[0], dir)
	cmd.Env = append(os.Environ(), watchParentHelperEnv+"="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("intermediate shell: %v: %s", err, out)
	}

	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "orphaned")); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("helper did not notice that its parent died within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWatchParentReturnsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	WatchParent(ctx, 5*time.Millisecond, func() { t.Error("onDeath called while the parent lives") })
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("WatchParent returned before ctx was done: %v", ctx.Err())
	}
}

func TestParentGoneStaysOpenWhileTheParentLives(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	gone := ParentGone(ctx, 5*time.Millisecond)
	select {
	case <-gone:
		t.Fatal("ParentGone closed while the parent lives")
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
}
