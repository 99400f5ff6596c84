package hosttest

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/sdk/plugintest/scripted"
)

// A backend whose sessions live only in its plugin process (resume scope
// in_process, like claude's TUI; here the scripted plugin with
// SCRIPTED_RESUME_SCOPE=in_process): a parked runtime keeps its plugin,
// a follow-up continues the same session in that very process, and once
// the plugin is SIGKILLed the next follow-up is refused as "session lost",
// naming why, instead of starting a new session; nothing is launched for
// it and the stream still ends with the last real session.end.
func TestStableInProcessFollowUpAndLoss(t *testing.T) {
	w := newWorld(t)
	s := w.startStable("sup", []string{scripted.ResumeScopeEnv + "=in_process"})
	c := s.client()
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Prompt: "announce"})
	rt := waitEnded(t, c, sp.RuntimeID, 10*time.Second)
	if !rt.Parked || rt.PluginPID == 0 || !strings.Contains(string(rt.Raw), `"resume_scope":"in_process"`) {
		t.Fatalf("parked in_process runtime with its plugin kept, got: %s", rt.Raw)
	}

	if err := c.Prompt(ctxT(t, 10*time.Second), "announce", sp.RuntimeID); err != nil {
		t.Fatalf("follow-up of the parked runtime: %v", err)
	}
	rt2 := waitRuntime(t, c, sp.RuntimeID, 15*time.Second, "ended after the follow-up", func(r client.Runtime) bool {
		return r.Parked && strings.Contains(r.FinalOutput, "turn 2")
	})
	if rt2.SessionID != sp.SessionID || rt2.PluginPID != rt.PluginPID || *rt2.ExitCode != 0 {
		t.Fatalf("the follow-up did not continue session %s in plugin %d: %s", sp.SessionID, rt.PluginPID, rt2.Raw)
	}

	if err := syscall.Kill(rt.PluginPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	lost := waitRuntime(t, c, sp.RuntimeID, 10*time.Second, "without its plugin", func(r client.Runtime) bool { return r.PluginPID == 0 })
	if !strings.Contains(string(lost.Raw), `"session_lost":"its plugin scripted exited while the runtime was parked"`) {
		t.Errorf("the runtime entry does not say the session is lost: %s", lost.Raw)
	}
	before := len(readEvents(t, sp.OnEvent))
	err := c.Prompt(ctxT(t, 10*time.Second), "announce", sp.RuntimeID)
	if err == nil {
		t.Fatal("a follow-up after the plugin died was accepted; it must be refused (session lost)")
	}
	for _, want := range []string{"session lost", sp.SessionID, "exited while the runtime was parked", "in_process", "spawn a new runtime"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	time.Sleep(300 * time.Millisecond) // a wrongly started run would have written by now
	evs := checkStream(t, sp.OnEvent, sp.RuntimeID)
	if len(evs) != before || len(only(evs, "session.start")) != 2 {
		t.Errorf("the refused follow-up touched the stream (%d events, were %d) or a session started: %v", len(evs), before, names(evs))
	}
	if strings.Contains(fmtChunks(evs), "turn 3") {
		t.Error("the lost session ran a third turn")
	}
}

// fmtChunks joins the text of the agent.message_chunk events.
func fmtChunks(evs []event) string {
	var b strings.Builder
	for _, ev := range only(evs, "agent.message_chunk") {
		if c, ok := ev["content"].(map[string]any); ok {
			s, _ := c["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}
