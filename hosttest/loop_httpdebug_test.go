package hosttest

import (
	"os"
	"testing"
)

// TestLoopWithHTTPDebug: --http-debug serves a loop run as it serves a
// single run (the adapter's target is the whole loop); the flag is not
// refused and the token file is written for scripts.
func TestLoopWithHTTPDebug(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	cfg := w.writeConfig("loop.json", map[string]any{
		"loop": []phase{{"name": "a", "prompt": `say "[loop: exit | done]\n"`}},
	})
	tok := w.path("token")
	run := w.workflow("deadbeefcafe2001", "--loop-file", cfg, "--http-debug", "127.0.0.1:0", "--http-debug-token-file", tok)
	if run.res.code != 0 {
		t.Fatalf("want exit 0; got %v", run.res)
	}
	if data, err := os.ReadFile(tok); err == nil && len(data) == 0 {
		t.Fatal("empty token file")
	}
	if got := lastOf(t, run.evs, "avenor.loop.end").str("exit_reason"); got != "marker" {
		t.Fatalf("exit_reason %q, want marker", got)
	}
}
