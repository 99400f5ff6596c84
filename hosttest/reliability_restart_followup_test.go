//go:build reliability

package hosttest

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// TestReliabilityRestartFollowUp: a runtime parked before its supervisor
// was SIGKILLed takes a follow-up from the restarted one, and that turn is
// its own. The plugin outlived the supervisor (linger) and replays the end
// of the last turn it ran when the new one attaches; that end must never
// be taken for the follow-up's (it once was: both were turn "1", and the
// follow-up ended at once with the first turn's answer).
func TestReliabilityRestartFollowUp(t *testing.T) {
	w := newWorld(t)
	s := w.startStable("st", nil, "--linger", "30s")
	c := s.client()
	sp := spawn(t, c, client.SpawnParams{Backend: "echo", Dir: w.work, Prompt: "say one"})
	rt := waitRuntime(t, c, sp.RuntimeID, 20*time.Second, "idle", func(rt client.Runtime) bool { return rt.Status == "idle" })
	s.signal(syscall.SIGKILL)
	s.wait()

	s2 := w.startStable("st", nil, "--linger", "30s")
	c2 := s2.client()
	waitRuntime(t, c2, sp.RuntimeID, 20*time.Second, "idle after the restart", func(rt client.Runtime) bool { return rt.Status == "idle" })
	if err := c2.Prompt(ctxT(t, 10*time.Second), "say two", sp.RuntimeID); err != nil {
		t.Fatalf("follow-up: %v", err)
	}
	var ends []event
	if !waitFor(20*time.Second, func() bool {
		ends = only(readEventsQuiet(rt.EventPath), "session.end")
		return len(ends) >= 2
	}) {
		t.Fatalf("the follow-up never ended: %d session.end in %s", len(ends), rt.EventPath)
	}
	if out := ends[1].str("final_output"); !strings.Contains(out, "say two") {
		t.Errorf("the follow-up's session.end says %q: the first turn's end was taken for it", out)
	}
	if chunks := only(readEventsQuiet(rt.EventPath), "agent.message_chunk"); len(chunks) < 6 {
		t.Errorf("the follow-up streamed no answer of its own: %d chunks in all", len(chunks))
	}
	if err := c2.Shutdown(ctxT(t, 10*time.Second), "graceful"); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	s2.exited(0, 20*time.Second)
}
