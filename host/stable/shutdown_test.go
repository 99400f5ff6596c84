package stable

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	hostrun "github.com/avenor-go/avenor/host/run"

	"github.com/avenor-go/avenor/client"
)

// startInProcess serves a supervisor on a fresh socket and dials it.
func startInProcess(t *testing.T) (*client.Client, string, <-chan string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "avs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var launches atomic.Int32
	_, c, served := serveInProcess(t, Config{SocketPath: filepath.Join(dir, "s.sock"), TempDir: dir, Home: dir, Resolve: inProcess(&launches)})
	return c, dir, served
}

// serveInProcess serves a supervisor of cfg and dials it; served gets
// Serve's reason. The client is closed when the test ends.
func serveInProcess(t *testing.T, cfg Config) (sup *Supervisor, c *client.Client, served <-chan string) {
	t.Helper()
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reasons := make(chan string, 1)
	go func() {
		reason, _ := sup.Serve(context.Background())
		reasons <- reason
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for c == nil {
		if c, err = client.Dial(ctx, cfg.SocketPath); err != nil {
			if ctx.Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Cleanup(func() { c.Close() })
	return sup, c, reasons
}

func waitRunning(t *testing.T, ctx context.Context, c *client.Client, id string) {
	t.Helper()
	for {
		rt, err := c.Runtime(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		// The script's first line must have run: ignore-cancel set.
		if strings.Contains(string(rt.Raw), `"turn_state":"running"`) {
			time.Sleep(100 * time.Millisecond)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// From the shutdown answer on, a prompt is refused with a clear error: it
// used to be queued in a run the shutdown was cancelling, answered
// accepted, and never run.
func TestPromptRefusedDuringShutdown(t *testing.T) {
	c, dir, served := startInProcess(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The plugin ignores the cancel: the run stays in its turn for the
	// cancel budget while the supervisor shuts down.
	sp, err := c.Spawn(ctx, client.SpawnParams{Backend: "scripted", Dir: dir, Prompt: "ignore-cancel\nsleep 30s"})
	if err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ctx, c, sp.RuntimeID)
	if err := c.Shutdown(ctx, ""); err != nil {
		t.Fatal(err)
	}
	for _, interrupt := range []bool{false, true} {
		var err error
		if interrupt {
			err = c.InterruptAndPrompt(ctx, "say late", false, sp.RuntimeID)
		} else {
			err = c.Prompt(ctx, "say late", sp.RuntimeID)
		}
		if err == nil || !strings.Contains(err.Error(), "shutting down") {
			t.Errorf("prompt (interrupt %v) during shutdown: %v", interrupt, err)
		}
	}
	if reason := <-served; reason != ReasonShutdown {
		t.Fatalf("reason %q", reason)
	}
}

// A prompt sent while a cancelled run is still ending its turn is refused
// once the run has ended, with the reason and the fix: the cancel ended the
// runtime (docs/stable.md#runtimes). It used to be accepted into the ending run and
// lost.
func TestPromptAfterCancelIsRefused(t *testing.T) {
	c, dir, served := startInProcess(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sp, err := c.Spawn(ctx, client.SpawnParams{Backend: "scripted", Dir: dir, Prompt: "ignore-cancel\nsleep 30s"})
	if err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ctx, c, sp.RuntimeID)
	if err := c.Cancel(ctx, sp.RuntimeID); err != nil {
		t.Fatal(err)
	}
	err = c.Prompt(ctx, "say after", sp.RuntimeID)
	if err == nil || !strings.Contains(err.Error(), ErrRuntimeEnded.Error()) || !strings.Contains(err.Error(), "stop reason cancelled (exit code 130)") ||
		!strings.Contains(err.Error(), "spawn a new runtime") {
		t.Fatalf("prompt after cancel: %v, want the ended runtime's refusal", err)
	}
	rt, err := c.Runtime(ctx, sp.RuntimeID)
	if err != nil {
		t.Fatal(err)
	}
	var extra struct {
		Runs int `json:"runs"`
	}
	_ = json.Unmarshal(rt.Raw, &extra)
	if rt.Status != hostrun.StatusEnded || rt.ExitCode == nil || *rt.ExitCode != 130 || extra.Runs != 1 {
		t.Fatalf("the cancelled runtime: %s", rt.Raw)
	}
	if err := c.Shutdown(ctx, ""); err != nil {
		t.Fatal(err)
	}
	<-served
}
