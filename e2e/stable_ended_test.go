//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/e2e/fakellm"
)

// TestStableEndedOpencode (docs/stable.md#runtimes): two real opencode-acp
// runtimes are mid-turn (a slow stream from the fake model); one is
// cancelled, the other's plugin is SIGKILLed. Neither parks: each lists
// ended with its exit code (130, 1), its sentinel (KILLED, FAILED) and a
// last session.end, where a harness waiting for ended finds it; a follow-up
// prompt is refused. Nothing of the supervisor is left after its shutdown.
func TestStableEndedOpencode(t *testing.T) {
	w := newWorld(t, opencode, fakellm.Config{Script: func(*fakellm.Request) fakellm.Reply {
		return fakellm.Slow(600, 100*time.Millisecond)
	}})
	sock := filepath.Join(w.tmp, "s.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sup := w.start("stable", "--control-socket", sock)
	c := dialStable(t, ctx, sock)
	defer c.Close()

	// streaming spawns a runtime and waits until its turn streams.
	streaming := func(label string) client.Runtime {
		t.Helper()
		sp, err := c.Spawn(ctx, client.SpawnParams{Backend: opencode.backend, Dir: w.work, Prompt: "Count slowly.", AutoApprove: client.Bool(true), Label: label})
		if err != nil {
			t.Fatal(err)
		}
		if !waitFor(90*time.Second, func() bool {
			for _, ev := range readEvents(t, sp.OnEvent) {
				if ev.name() == "agent.message_chunk" {
					return true
				}
			}
			return false
		}) {
			t.Fatalf("%s streamed nothing: %s", sp.RuntimeID, tail(sup.stderr.String(), 2000))
		}
		rt, err := c.Runtime(ctx, sp.RuntimeID)
		if err != nil {
			t.Fatal(err)
		}
		if rt.Status != "running" || rt.PluginPID == 0 {
			t.Fatalf("%s mid-turn: %s", sp.RuntimeID, rt.Raw)
		}
		return rt
	}
	// ended waits for the runtime to list ended, as a harness does, and
	// checks its exit code, sentinel and log.
	ended := func(rt client.Runtime, code int, sentinelStatus, stop string) {
		t.Helper()
		var got client.Runtime
		if !waitFor(60*time.Second, func() bool {
			var err error
			got, err = c.Runtime(ctx, rt.RuntimeID)
			return err == nil && got.Status == "ended"
		}) {
			t.Fatalf("%s never listed ended: %s", rt.RuntimeID, got.Raw)
		}
		if got.ExitCode == nil || *got.ExitCode != code || string(got.StopReason) != stop {
			t.Errorf("%s: exit_code %v stop_reason %q, want %d %q", rt.RuntimeID, got.ExitCode, got.StopReason, code, stop)
		}
		if s := readSentinel(t, rt.SentinelFile); s.status != sentinelStatus || s.fields["STOP_REASON"] != stop {
			t.Errorf("%s: sentinel %q, want %s with STOP_REASON=%s", rt.RuntimeID, s.raw, sentinelStatus, stop)
		}
		evs := readEvents(t, rt.OnEvent)
		if len(evs) == 0 || evs[len(evs)-1].name() != "session.end" || evs[len(evs)-1].str("stop_reason") != stop {
			t.Errorf("%s: the log does not end with a session.end (%s): %v", rt.RuntimeID, stop, names(evs))
		}
		if err := c.Prompt(ctx, "Go on.", rt.RuntimeID); err == nil {
			t.Errorf("%s: an ended runtime took a follow-up prompt", rt.RuntimeID)
		}
	}

	cancelled := streaming("cancelled")
	if err := c.Cancel(ctx, cancelled.RuntimeID); err != nil {
		t.Fatal(err)
	}
	ended(cancelled, 130, "KILLED", "cancelled")

	killed := streaming("killed")
	if err := syscall.Kill(killed.PluginPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ended(killed, 1, "FAILED", "error")

	if err := c.Shutdown(ctx, "graceful"); err != nil {
		t.Logf("shutdown: %v", err)
	}
	if r := sup.wait(); r.code != 0 {
		t.Errorf("avenor stable: %s", r)
	}
	sup.checkNoLeftovers()
}
