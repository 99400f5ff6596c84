package hosttest

import (
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/sdk/plugintest/scripted"
)

// TestResumeWithNewPermissionMode: `avenor run --resume S --permission-mode
// plan` resumes the session in a fresh plugin process, which is launched
// under the new mode (every backend passes it at launch): the resumed
// turn's write is rejected by the mode even with --auto-approve.
func TestResumeWithNewPermissionMode(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	first := w.path("first.ndjson")
	if res := w.run("--backend", "scripted", "--dir", w.work, "--prompt", "say one", "--on-event", first); res.code != 0 {
		t.Fatalf("first run: %v", res)
	}
	sess := sessionOf(t, readEvents(t, first))
	second := w.path("second.ndjson")
	res := w.run("--backend", "scripted", "--dir", w.work, "--resume", sess, "--prompt", "permission tool=Write",
		"--permission-mode", "plan", "--auto-approve", "--on-event", second)
	if res.code != 0 {
		t.Fatalf("resumed run: %v", res)
	}
	evs := readEvents(t, second)
	if start := only(evs, "session.start")[0]; start.str("permission_mode") != "plan" {
		t.Errorf("the resumed session.start %v lacks permission_mode plan", start)
	}
	if got := decisions(evs); got != "mode:reject" {
		t.Errorf("decisions %s; want the resumed turn's write rejected by the new mode", got)
	}
}

// TestStableResumeHeldSessionModeChange: a spawn resuming a session that a
// parked runtime holds in its live plugin cannot change its permission
// mode — that process was started under the old one — and is refused
// saying so; with the same mode it resumes there.
func TestStableResumeHeldSessionModeChange(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	c := w.startStable("held", []string{scripted.ResumeScopeEnv + "=in_process"}).client()
	id, err := spawnLaunch(t, c, map[string]any{"backend": "scripted", "dir": w.work, "prompt": "say one", "permission_mode": "plan"})
	if err != nil {
		t.Fatalf("spawn: %v", err)
	}
	rt := waitRuntime(t, c, id, 20*time.Second, "parked with its plugin", func(rt client.Runtime) bool { return rt.Parked && rt.PluginPID != 0 })
	_, err = spawnLaunch(t, c, map[string]any{"backend": "scripted", "dir": w.work, "prompt": "say two", "session_id": rt.SessionID, "permission_mode": "full-access"})
	if err == nil || !strings.Contains(err.Error(), "whose plugin was started under permission mode plan") || !strings.Contains(err.Error(), "a live session cannot change them") {
		t.Fatalf("resume under another mode: %v; want it refused naming the held mode", err)
	}
	id2, err := spawnLaunch(t, c, map[string]any{"backend": "scripted", "dir": w.work, "prompt": "say two", "session_id": rt.SessionID, "permission_mode": "plan"})
	if err != nil {
		t.Fatalf("resume under the same mode: %v", err)
	}
	if rt2 := waitEnded(t, c, id2, 20*time.Second); rt2.SessionID != rt.SessionID || rt2.PluginPID != rt.PluginPID {
		t.Errorf("the resume did not continue session %s in plugin %d: %s", rt.SessionID, rt.PluginPID, rt2.Raw)
	}
}
