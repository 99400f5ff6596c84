//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// timingRounds is how many prompts each way the timing takes the median
// of: 5, or AVENOR_E2E_TIMING_ROUNDS.
func timingRounds() int {
	if n, err := strconv.Atoi(os.Getenv("AVENOR_E2E_TIMING_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 5
}

// TestTimingOpencode measures the wall time of one opencode-acp prompt (tool
// call, permission, tool run, final text) through avenor against the same
// prompt driven directly over ACP, each from process start to process exit,
// each in a fresh world (cold opencode state), alternating. It prints the
// medians; it fails only when a run fails.
func TestTimingOpencode(t *testing.T) {
	if _, err := os.Stat(filepath.Join(bins.dir, "avenor-plugin-opencode")); err != nil {
		t.Fatalf("the opencode plugin is not built: %v", err)
	}
	var viaAvenor, direct, directTurn []time.Duration
	rounds := timingRounds()
	for i := 0; i < rounds; i++ {
		t.Run("avenor", func(t *testing.T) {
			w := newWorld(t, opencode, fakellm.Config{Logf: func(string, ...any) {}})
			run := w.startAvenor("run", "--prompt", shellPrompt, "--auto-approve")
			res, evs, s := run.finish()
			checkDone(t, "run", res, evs, s)
			checkOutFile(t, w, true)
			viaAvenor = append(viaAvenor, res.elapsed)
		})
		t.Run("direct", func(t *testing.T) {
			w := newWorld(t, opencode, fakellm.Config{Logf: func(string, ...any) {}})
			start := time.Now()
			a := startACP(w, pickKind("allow_once"))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			sid, err := a.newSession(ctx, w.work)
			if err != nil {
				t.Fatalf("%v\n%s", err, a.transcript())
			}
			if stop, err := a.prompt(ctx, sid, shellPrompt); err != nil || stop != "end_turn" {
				t.Fatalf("prompt: %q %v\n%s", stop, err, a.transcript())
			}
			directTurn = append(directTurn, time.Since(start))
			a.close()
			direct = append(direct, time.Since(start))
			checkOutFile(t, w, true)
		})
	}
	if t.Failed() {
		return
	}
	ma, md := median(viaAvenor), median(direct)
	t.Logf("opencode-acp prompt, median of %d (process start → exit):", rounds)
	t.Logf("  through avenor: %v   (runs %v)", ma.Round(time.Millisecond), rounded(viaAvenor))
	t.Logf("  direct ACP:     %v   (runs %v; to the prompt result %v)", md.Round(time.Millisecond), rounded(direct),
		median(directTurn).Round(time.Millisecond))
	t.Logf("  avenor overhead: %v (%.0f%%)", (ma - md).Round(time.Millisecond), 100*float64(ma-md)/float64(md))
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func rounded(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(10 * time.Millisecond)
	}
	return out
}
