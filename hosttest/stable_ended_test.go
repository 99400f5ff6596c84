package hosttest

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// docs/stable.md#runtimes: in avenor stable only a runtime whose turn ended
// well parks (lists idle and takes follow-ups). One that was cancelled,
// whose plugin died, or whose turn ended in error is ended, with its
// exit_code and sentinel: a harness that waits for ended must never wait
// for ever.

// TestStableOnlyAWellEndedTurnParks drives one supervisor through the four
// ways a turn ends and checks what status, list, the sentinel, the log and a
// follow-up say of each.
func TestStableOnlyAWellEndedTurnParks(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.startStable("ended", nil)
	c := s.client()

	// ended waits for a runtime's status to say ended and checks its
	// exit code, stop reason, sentinel and last session.end.
	ended := func(t *testing.T, id, what string, code int, stop, sentinelStatus, endReason string) {
		t.Helper()
		rt := waitRuntime(t, c, id, 20*time.Second, "ended ("+what+")", func(rt client.Runtime) bool { return rt.Status == "ended" })
		if rt.ExitCode == nil || *rt.ExitCode != code || string(rt.StopReason) != stop {
			t.Errorf("%s: exit_code %v stop_reason %q, want %d %q: %s", what, rt.ExitCode, rt.StopReason, code, stop, rt.Raw)
		}
		checkSentinel(t, rt.SentinelFile, sentinelBytes(sentinelStatus, rt.SessionID, stop, code, rt.RunID))
		evs := checkStream(t, rt.OnEvent, id)
		if got := lastSessionEnd(t, evs).str("stop_reason"); got != endReason {
			t.Errorf("%s: last session.end stop_reason %q, want %q", what, got, endReason)
		}
		list, err := c.List(ctxT(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range list {
			if e.RuntimeID == id && e.Status != "ended" {
				t.Errorf("%s: list says %q, want ended", what, e.Status)
			}
		}
		// It takes no follow-up, and says what to do instead.
		err = c.Prompt(ctxT(t, 10*time.Second), "say again", id)
		if err == nil || !strings.Contains(err.Error(), "spawn a new runtime") {
			t.Errorf("%s: a follow-up prompt answered %v, want a refusal naming the fix", what, err)
		}
		if rt := runtimeOf(t, c, id); rt.Status != "ended" {
			t.Errorf("%s: after the refused prompt the runtime lists %q", what, rt.Status)
		}
	}
	// running spawns a runtime whose turn sleeps, and waits until it runs
	// with its plugin up.
	running := func(t *testing.T, label string) client.Runtime {
		t.Helper()
		sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say started\nsleep 30s", Label: label})
		return waitRuntime(t, c, sp.RuntimeID, 15*time.Second, "running with its plugin", func(rt client.Runtime) bool {
			return rt.Status == "running" && rt.PluginPID > 0 && rt.SessionID != ""
		})
	}

	t.Run("a turn that ended well parks idle", func(t *testing.T) {
		sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say fine"})
		rt := waitEnded(t, c, sp.RuntimeID, 15*time.Second)
		if rt.Status != "idle" || rt.ExitCode == nil || *rt.ExitCode != 0 || rt.StopReason != "end_turn" {
			t.Fatalf("a runtime whose turn ended well: %s", rt.Raw)
		}
		checkSentinel(t, rt.SentinelFile, sentinelBytes("DONE", rt.SessionID, "end_turn", 0, rt.RunID))
		if err := c.Prompt(ctxT(t, 10*time.Second), "say more", sp.RuntimeID); err != nil {
			t.Fatalf("an idle runtime refused a follow-up: %v", err)
		}
		waitRuntime(t, c, sp.RuntimeID, 15*time.Second, "idle after its follow-up", func(rt client.Runtime) bool {
			return rt.Status == "idle" && rt.FinalOutput == "more"
		})
	})
	t.Run("cancel ends it with 130 and KILLED", func(t *testing.T) {
		rt := running(t, "cancelled")
		if err := c.Cancel(ctxT(t, 10*time.Second), rt.RuntimeID); err != nil {
			t.Fatal(err)
		}
		ended(t, rt.RuntimeID, "cancelled", 130, "cancelled", "KILLED", "cancelled")
	})
	t.Run("a plugin killed mid-turn ends it", func(t *testing.T) {
		rt := running(t, "killed")
		if err := syscall.Kill(rt.PluginPID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		ended(t, rt.RuntimeID, "plugin killed", 1, "error", "FAILED", "error")
	})
	t.Run("a turn that failed ends it", func(t *testing.T) {
		sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say trying\nfail the model gave up"})
		ended(t, sp.RuntimeID, "turn failed", 1, "error", "FAILED", "error")
	})
}
