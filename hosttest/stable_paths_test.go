package hosttest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// TestStableDefaultArtifactPaths (docs/stable.md): a spawn that names no
// paths writes $TMPDIR/avenor-stable/<supervisor_run_id>/<runtime_id>/
// events.ndjson and sentinel.env, where supervisor_run_id is the id status
// reports for the supervisor itself (run_id before any runtime exists,
// supervisor_run_id beside a runtime's snapshot); every level is a 0700
// directory of ours.
func TestStableDefaultArtifactPaths(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.startStable("paths", nil)
	c := s.client()
	status := func() map[string]any {
		t.Helper()
		var m map[string]any
		if err := c.Call(ctxT(t, 10*time.Second), "status", nil, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := status()
	supID, _ := before["run_id"].(string)
	if supID == "" || before["supervisor_run_id"] != supID {
		t.Fatalf("status before any runtime: run_id %v, supervisor_run_id %v", before["run_id"], before["supervisor_run_id"])
	}
	for i := 1; i <= 2; i++ {
		sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say hi"})
		rtDir := filepath.Join(w.tmp, "avenor-stable", supID, sp.RuntimeID)
		if sp.OnEvent != filepath.Join(rtDir, "events.ndjson") || sp.SentinelFile != filepath.Join(rtDir, "sentinel.env") {
			t.Fatalf("spawn %d: on_event %q sentinel_file %q, want them in %s", i, sp.OnEvent, sp.SentinelFile, rtDir)
		}
		rt := waitEnded(t, c, sp.RuntimeID, 15*time.Second)
		checkSentinel(t, sp.SentinelFile, sentinelBytes("DONE", rt.SessionID, "end_turn", 0, rt.RunID))
		if after := status(); after["supervisor_run_id"] != supID {
			t.Fatalf("status beside %s: supervisor_run_id %v, want %s", sp.RuntimeID, after["supervisor_run_id"], supID)
		}
		for _, d := range []string{filepath.Join(w.tmp, "avenor-stable"), filepath.Dir(rtDir), rtDir} {
			fi, err := os.Lstat(d)
			if err != nil {
				t.Fatal(err)
			}
			st, _ := fi.Sys().(*syscall.Stat_t)
			if !fi.IsDir() || fi.Mode().Perm() != 0o700 || st == nil || int(st.Uid) != os.Getuid() {
				t.Errorf("%s: mode %v, want a 0700 directory of uid %d", d, fi.Mode(), os.Getuid())
			}
		}
	}
}
