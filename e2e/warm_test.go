//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/e2e/fakellm"
)

// TestTimingWarmOpencode: spawn → first agent event on a real opencode-acp
// under `avenor stable`, with a warm pool (`--warm opencode-acp=1`) against
// without one, the median of timingRounds() spawns each, in one run: warm
// spawns of a member that sat in the pool for memberIdle, and of one taken
// the moment it was ready. Each
// warm spawn must take the pool's member (its session is the one the pool
// had open) and the pool must refill before the next. It prints the
// medians; it fails only when a spawn fails or a warm spawn starts cold.
func TestTimingWarmOpencode(t *testing.T) {
	rounds := timingRounds()
	reply := fakellm.Config{Script: func(*fakellm.Request) fakellm.Reply { return fakellm.Text("WARM OR COLD") }, Logf: func(string, ...any) {}}
	// idle is how long a warm member has sat in the pool when the spawn
	// comes: 0 is a spawn the moment a member is ready (its warm-up may
	// still be running), memberIdle one that waited in the pool a while, as
	// a pool's members mostly do.
	measure := func(t *testing.T, warm bool, idle time.Duration) []time.Duration {
		w := newWorld(t, opencode, reply)
		sock := filepath.Join(w.tmp, "s.sock")
		args := []string{"stable", "--control-socket", sock}
		if warm {
			args = append(args, "--warm", "opencode-acp=1,dir="+w.work)
		}
		sup := w.start(args...)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		c := dialStable(t, ctx, sock)
		defer c.Close()
		var out []time.Duration
		for i := range rounds {
			var warmSession string
			if warm {
				warmSession = waitWarmMember(t, ctx, c)
				time.Sleep(idle)
			}
			start := time.Now()
			sp, err := c.Spawn(ctx, client.SpawnParams{Backend: "opencode-acp", Dir: w.work, Prompt: "Say it.", AutoApprove: client.Bool(true)})
			if err != nil {
				t.Fatalf("spawn %d: %v", i, err)
			}
			first := waitFirstAgentEvent(t, ctx, sp.OnEvent)
			out = append(out, first.Sub(start))
			rt := waitSettled(t, ctx, c, sp.RuntimeID)
			if rt.StopReason != "end_turn" || !strings.Contains(rt.FinalOutput, "WARM OR COLD") {
				t.Fatalf("spawn %d ended %q with %q: %s", i, rt.StopReason, rt.FinalOutput, rt.Raw)
			}
			if warm && rt.SessionID != warmSession {
				t.Fatalf("warm spawn %d ran session %s, not the pool's %s", i, rt.SessionID, warmSession)
			}
			if i == rounds-1 {
				logTimeline(t, sp.OnEvent, start)
			}
		}
		if err := c.Shutdown(ctx, ""); err != nil {
			t.Fatal(err)
		}
		stopped(t, sup)
		return out
	}
	var warm, warmAtOnce, cold []time.Duration
	t.Run("cold", func(t *testing.T) { cold = measure(t, false, 0) })
	t.Run("warm", func(t *testing.T) { warm = measure(t, true, memberIdle) })
	t.Run("warm-at-once", func(t *testing.T) { warmAtOnce = measure(t, true, 0) })
	if t.Failed() {
		return
	}
	mw, mo, mc := median(warm), median(warmAtOnce), median(cold)
	t.Logf("opencode-acp under avenor stable, spawn → first agent event, median of %d:", rounds)
	t.Logf("  warm (--warm opencode-acp=1, member %v in the pool): %v   (spawns %v)", memberIdle, mw.Round(time.Millisecond), rounded(warm))
	t.Logf("  warm, spawned the moment a member is ready:        %v   (spawns %v)", mo.Round(time.Millisecond), rounded(warmAtOnce))
	t.Logf("  cold:                                              %v   (spawns %v)", mc.Round(time.Millisecond), rounded(cold))
	t.Logf("  warm/cold: %.2f (at once: %.2f)", float64(mw)/float64(mc), float64(mo)/float64(mc))
	if _, err := exec.LookPath("acpx"); err != nil {
		t.Logf("  acpx: not installed here, not measured")
	}
}

// memberIdle is how long a warm member sits in the pool before the spawn
// of TestTimingWarmOpencode's "warm" case: past the ~1 s a fresh opencode
// spends building its per-directory services after its warm-up request.
const memberIdle = 2 * time.Second

// logTimeline logs where a spawn's time went: each event up to the first
// agent.* one, at its ts after the spawn call started.
func logTimeline(t *testing.T, path string, start time.Time) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var line []string
	for _, l := range strings.Split(string(b), "\n") {
		var ev struct {
			Event string `json:"event"`
			TS    int64  `json:"ts"`
		}
		if json.Unmarshal([]byte(l), &ev) != nil {
			continue
		}
		line = append(line, fmt.Sprintf("%s +%dms", ev.Event, ev.TS-start.UnixMilli()))
		if strings.HasPrefix(ev.Event, "agent.") {
			break
		}
	}
	t.Logf("  timeline: %s", strings.Join(line, ", "))
}

func dialStable(t *testing.T, ctx context.Context, sock string) *client.Client {
	t.Helper()
	for {
		c, err := client.Dial(ctx, sock)
		if err == nil {
			return c
		}
		if ctx.Err() != nil {
			t.Fatalf("avenor stable did not listen: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitRuntime polls runtime id's status until done(r), failing with what
// when ctx ends first or a status call fails.
func waitRuntime(t *testing.T, ctx context.Context, c *client.Client, id, what string, done func(client.Runtime) bool) client.Runtime {
	t.Helper()
	for {
		r, err := c.Runtime(ctx, id)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if done(r) {
			return r
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: not reached: %s", what, r.Raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitWarmMember waits for a ready member of the supervisor's one pool
// and returns its session id.
func waitWarmMember(t *testing.T, ctx context.Context, c *client.Client) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		var members []struct {
			SessionID string `json:"session_id"`
		}
		if err := c.Call(ctx, "list", map[string]any{"warm": true}, &members); err != nil && ctx.Err() == nil {
			t.Fatal(err)
		}
		if len(members) == 1 && members[0].SessionID != "" {
			return members[0].SessionID
		}
		if ctx.Err() != nil {
			var st map[string]any
			_ = c.Call(context.Background(), "status", map[string]any{}, &st)
			t.Fatalf("no warm member: %v", st["warm"])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitFirstAgentEvent polls a runtime's log for its first agent.* event
// and returns the time it was seen.
func waitFirstAgentEvent(t *testing.T, ctx context.Context, path string) time.Time {
	t.Helper()
	for {
		if f, err := os.Open(path); err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
			for sc.Scan() {
				var ev struct {
					Event string `json:"event"`
				}
				if json.Unmarshal(sc.Bytes(), &ev) == nil && strings.HasPrefix(ev.Event, "agent.") {
					f.Close()
					return time.Now()
				}
			}
			f.Close()
		}
		if ctx.Err() != nil {
			t.Fatalf("no agent event in %s", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitSettled(t *testing.T, ctx context.Context, c *client.Client, id string) client.Runtime {
	t.Helper()
	for {
		rt, err := c.Runtime(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if rt.Parked || rt.Status == "ended" {
			return rt
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never settled: %s", id, rt.Raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWarmEveryBackend: each backend that says prewarm in its capabilities
// runs a spawn in a warm session of its real CLI: the pool's member is
// ready before the spawn, the spawn's turn ends end_turn with the model's
// text, in the member's session.
func TestWarmEveryBackend(t *testing.T) {
	for _, rt := range []*runtimeSpec{opencode, codex, piSpec, gemini, claudeStream} {
		t.Run(rt.backend, func(t *testing.T) {
			switch rt {
			case piSpec:
				needPi(t)
			case claudeStream:
				installClaude(t)
			}
			w := newWorld(t, rt, fakellm.Config{Script: func(*fakellm.Request) fakellm.Reply { return fakellm.Text("WARM REPLY") }, Logf: func(string, ...any) {}})
			sock := filepath.Join(w.tmp, "s.sock")
			sup := w.start("stable", "--control-socket", sock, "--warm", rt.backend+"=1,dir="+w.work)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			c := dialStable(t, ctx, sock)
			defer c.Close()
			session := waitWarmMember(t, ctx, c)
			sp, err := c.Spawn(ctx, client.SpawnParams{Backend: rt.backend, Dir: w.work, Prompt: "Say it.", AutoApprove: client.Bool(true)})
			if err != nil {
				t.Fatal(err)
			}
			got := waitSettled(t, ctx, c, sp.RuntimeID)
			if got.SessionID != session || got.StopReason != "end_turn" || !strings.Contains(got.FinalOutput, "WARM REPLY") {
				t.Fatalf("warm spawn of %s (pool session %s): %s", rt.backend, session, got.Raw)
			}
			if err := c.Shutdown(ctx, ""); err != nil {
				t.Fatal(err)
			}
			stopped(t, sup)
		})
	}
}

// stopped waits for a supervisor told to shut down to exit by itself, 0,
// with nothing it started left running. Without the wait the test's
// cleanup would SIGKILL a supervisor still stopping its runtimes, and a
// CLI it had not yet reaped would write into the test's home while the
// temporary directory is removed.
func stopped(t *testing.T, sup *proc) {
	t.Helper()
	if res := sup.wait(); res.code != 0 {
		t.Errorf("avenor stable after shutdown: %v", res)
	}
	sup.checkNoLeftovers()
}
