//go:build reliability

package hosttest

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// knownBug skips a check that fails on a product bug already reported,
// unless RELIABILITY_KNOWN_BUGS=1: CI stays green while the bug is open,
// and the test that shows it is one variable away.
func knownBug(t *testing.T, what string) bool {
	t.Helper()
	if os.Getenv("RELIABILITY_KNOWN_BUGS") == "0" {
		t.Logf("known bug, not checked (RELIABILITY_KNOWN_BUGS=0): %s", what)
		return true
	}
	// Fixed: the host drops events after session.end (to its log) and no
	// longer reports an abandoned permission wait as undelivered.
	return false
}

// TestStablePluginKilledDuringPermission: a stable runtime's plugin is
// SIGKILLed while its permission request is pending. The runtime's log must
// end with session.end; about one time in three it gets an avenor.error
// (source permission, delivery not_sent: "permission decision for request
// perm_1 (cancelled ) was not sent: the plugin died: EOF") after
// session.end instead. `avenor run` does the same (the crash matrix sees it
// there too). Found by the crash matrix; runs only with
// RELIABILITY_KNOWN_BUGS=1.
func TestStablePluginKilledDuringPermission(t *testing.T) {
	if knownBug(t, "stable: avenor.error written after session.end when the plugin dies during a pending permission") {
		t.Skip()
	}
	w := newWorld(t)
	s := w.startStable("perm", nil)
	c := s.client()
	for i := 0; i < 10; i++ {
		sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say before\npermission tool=bash\nsay after"})
		rt := waitRuntime(t, c, sp.RuntimeID, 10*time.Second, "with a plugin",
			func(rt client.Runtime) bool { return rt.PluginPID > 0 })
		waitForLog(t, sp.OnEvent, `"event":"permission.request"`, 10*time.Second)
		_ = syscall.Kill(rt.PluginPID, syscall.SIGKILL)
		waitEnded(t, c, sp.RuntimeID, 20*time.Second)
		time.Sleep(200 * time.Millisecond) // let a late event land
		evs := readEvents(t, sp.OnEvent)
		if last := evs[len(evs)-1]; last.name() != "session.end" {
			t.Fatalf("trial %d: %s ends with %s after session.end: %v\nlast events: %v", i, sp.RuntimeID, last.name(), names(evs), evs[len(evs)-3:])
		}
	}
}
