//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/e2e/fakellm"
)

// TestStableSpawnPlanMode: a real opencode-acp runtime spawned through
// `avenor stable` with permission_mode plan (and auto_approve) leaves the
// workspace unchanged when the model asks for a file write and a shell
// command: the spawn param reaches the runtime natively and its broker.
func TestStableSpawnPlanMode(t *testing.T) {
	w := newWorld(t, opencode, fakellm.Config{})
	w.llm.SetScript(editThenCommand(opencode, w.work))
	before := workspace(t, w.work)
	sock := filepath.Join(w.tmp, "s.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sup := w.start("stable", "--control-socket", sock)
	c := dialStable(t, ctx, sock)
	defer c.Close()
	var sp client.Spawned
	if err := c.Call(ctx, "spawn", map[string]any{"backend": opencode.backend, "dir": w.work, "prompt": "Write edit.txt, then run a command.",
		"auto_approve": true, "permission_mode": "plan"}, &sp); err != nil {
		t.Fatalf("spawn: %v", err)
	}
	for {
		rt, err := c.Runtime(ctx, sp.RuntimeID)
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		if rt.Parked || rt.Status == "ended" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the runtime did not end its turn: %s", rt.Raw)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if after := workspace(t, w.work); !slices.Equal(before, after) {
		t.Errorf("the workspace changed under plan: %v → %v", before, after)
	}
	evs := readEvents(t, sp.OnEvent)
	if start := only(evs, "session.start"); len(start) != 1 || start[0].str("permission_mode") != "plan" {
		t.Errorf("session.start %v does not record permission_mode plan", start)
	}
	for _, resp := range only(evs, "permission.response") {
		if resp.str("kind") == "allow" {
			t.Errorf("plan allowed a request: %v", resp)
		}
	}
	if s := readSentinel(t, sp.SentinelFile); s.status != "DONE" {
		t.Errorf("sentinel %+v, want DONE", s)
	}
	if err := c.Shutdown(ctx, "graceful"); err != nil {
		t.Logf("shutdown: %v", err)
	}
	sup.wait()
	sup.checkNoLeftovers()
}
