//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/e2e/fakellm"
)

// TestStableRestartOpencode: two real opencode-acp runtimes are mid-turn
// (a slow stream from the fake model) when `avenor stable` is SIGKILLed;
// a supervisor started again on the same socket re-attaches to their
// lingering plugins and both turns complete as if nothing happened: one
// avenor.supervisor.reattached, seq contiguous from 1, one session.end
// (end_turn) with the whole answer, a DONE sentinel, and no process of
// either supervisor left once the second shuts down (docs/stable.md).
func TestStableRestartOpencode(t *testing.T) {
	// Long enough that both turns are still running when the first
	// supervisor is killed, even when the second opencode starts seconds
	// after the first (a runtime that finished before the kill is parked,
	// and a parked runtime's log gets no reattached line).
	const ticks = 120
	w := newWorld(t, opencode, fakellm.Config{Script: func(*fakellm.Request) fakellm.Reply {
		return fakellm.Slow(ticks, 100*time.Millisecond)
	}})
	sock := filepath.Join(w.tmp, "s.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dial := func() *client.Client { t.Helper(); return dialStable(t, ctx, sock) }
	first := w.start("stable", "--control-socket", sock, "--linger", "60s")
	c := dial()
	var spawned []client.Spawned
	for range 2 {
		sp, err := c.Spawn(ctx, client.SpawnParams{Backend: opencode.backend, Dir: w.work, Prompt: "Count slowly.", AutoApprove: client.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		spawned = append(spawned, sp)
	}
	for _, sp := range spawned {
		if !waitFor(90*time.Second, func() bool {
			for _, ev := range readEvents(t, sp.OnEvent) {
				if ev.name() == "agent.message_chunk" {
					return true
				}
			}
			return false
		}) {
			t.Fatalf("%s streamed nothing: %s", sp.RuntimeID, first.stderr.String())
		}
	}
	c.Close()
	for _, sp := range spawned {
		if len(only(readEvents(t, sp.OnEvent), "session.end")) != 0 {
			t.Fatalf("%s ended its turn before the kill: the test's turn is too short for this machine", sp.RuntimeID)
		}
	}
	_ = first.cmd.Process.Signal(syscall.SIGKILL)
	first.wait()

	second := w.start("stable", "--control-socket", sock, "--linger", "60s")
	c2 := dial()
	defer c2.Close()
	for _, sp := range spawned {
		var rt client.Runtime
		for {
			var err error
			if rt, err = c2.Runtime(ctx, sp.RuntimeID); err != nil {
				t.Fatalf("%s after the restart: %v", sp.RuntimeID, err)
			}
			if rt.Parked || rt.Status == "ended" {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%s did not finish its turn after the restart: %s", sp.RuntimeID, rt.Raw)
			}
			time.Sleep(200 * time.Millisecond)
		}
		evs := readEvents(t, sp.OnEvent)
		for i, ev := range evs {
			if seq, _ := ev["seq"].(float64); int(seq) != i+1 {
				t.Fatalf("%s: event %d (%s) has seq %v", sp.RuntimeID, i+1, ev.name(), ev["seq"])
			}
		}
		ends := only(evs, "session.end")
		if len(ends) != 1 || ends[0].str("stop_reason") != "end_turn" || evs[len(evs)-1].name() != "session.end" {
			t.Fatalf("%s: want one session.end (end_turn), last: %v", sp.RuntimeID, ends)
		}
		if n := len(only(evs, "avenor.supervisor.reattached")); n != 1 {
			t.Errorf("%s: %d avenor.supervisor.reattached, want 1", sp.RuntimeID, n)
		}
		if out := ends[0].str("final_output"); !strings.Contains(out, "tick 1 ") || !strings.Contains(out, fmt.Sprintf("tick %d", ticks)) {
			t.Errorf("%s: the answer is not whole after the restart: %q", sp.RuntimeID, out)
		}
		if s := readSentinel(t, sp.SentinelFile); s.status != "DONE" {
			t.Errorf("%s: sentinel %+v, want DONE", sp.RuntimeID, s)
		}
	}
	if err := c2.Shutdown(ctx, "graceful"); err != nil {
		t.Logf("shutdown: %v", err)
	}
	second.wait()
	// The plugins and opencode processes the first supervisor started were
	// re-attached, not relaunched (they are no children of the second), and
	// stopped by the second's shutdown.
	first.checkNoLeftovers()
}
