//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// TestTimingSandboxOpencode measures what --sandbox workspace costs a turn:
// the same opencode-acp prompt as TestTimingOpencode (tool call,
// permission, tool run, final text) through avenor, with and without the
// bubblewrap boundary, each from process start to process exit in a fresh
// world, alternating. It prints the medians and their wall ratio
// (make bench); it fails only when a run fails.
func TestTimingSandboxOpencode(t *testing.T) {
	if _, err := os.Stat(filepath.Join(bins.dir, "avenor-plugin-opencode")); err != nil {
		t.Fatalf("the opencode plugin is not built: %v", err)
	}
	var plain, sandboxed []time.Duration
	rounds := timingRounds()
	turn := func(t *testing.T, extra ...string) time.Duration {
		w := newWorld(t, opencode, fakellm.Config{Logf: func(string, ...any) {}})
		run := w.startAvenor("run", append([]string{"--prompt", shellPrompt, "--auto-approve"}, extra...)...)
		res, evs, s := run.finish()
		checkDone(t, "run", res, evs, s)
		checkOutFile(t, w, true)
		return res.elapsed
	}
	for i := 0; i < rounds; i++ {
		t.Run("unsandboxed", func(t *testing.T) { plain = append(plain, turn(t)) })
		t.Run("sandboxed", func(t *testing.T) { sandboxed = append(sandboxed, turn(t, "--sandbox", "workspace")) })
	}
	if t.Failed() {
		return
	}
	mp, ms := median(plain), median(sandboxed)
	t.Logf("opencode-acp prompt through avenor, median of %d (process start → exit):", rounds)
	t.Logf("  unsandboxed:              %v   (runs %v)", mp.Round(time.Millisecond), rounded(plain))
	t.Logf("  --sandbox workspace:      %v   (runs %v)", ms.Round(time.Millisecond), rounded(sandboxed))
	t.Logf("  sandbox cost: %v, wall ratio %.2f", (ms - mp).Round(time.Millisecond), float64(ms)/float64(mp))
}
