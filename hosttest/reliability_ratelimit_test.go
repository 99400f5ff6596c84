//go:build reliability

package hosttest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/stable"
)

// rateLimitRuntimes is how many runtimes wait on a rate limit at once:
// RELIABILITY_RATELIMIT_RUNTIMES, 20 by default.
func rateLimitRuntimes() int { return envInt("RELIABILITY_RATELIMIT_RUNTIMES", 20) }

// rateLimitReset is the scripted rate limit's reset; killReset is the
// kill test's, long enough for every runtime to be waiting at the kill
// however slowly the machine spawns them.
const (
	rateLimitReset = 2 * time.Second
	killReset      = 8 * time.Second
)

// rateLimitCapped is how many of the runtimes are limited more often than
// their max_rate_limit_resumes (2) allows.
const rateLimitCapped = 2

// TestReliabilityRateLimitWaitResume: 20 runtimes in stable with
// wait_on_rate_limit, each rate limited once with a 2 s reset: while they
// wait each lists running with waiting_reason rate_limit and
// rate_limited_until; every one resumes within reset + 5 s on the same
// session, its prompt sent again exactly once, and ends DONE. Two more,
// limited more often than max_rate_limit_resumes 2, end with the error
// (rate_limited, FAILED) after exactly two resumes. Reports the resume
// delay after the reset (p50/max) and the re-send counts.
func TestReliabilityRateLimitWaitResume(t *testing.T) {
	rateLimitTrial(t, false)
}

// TestReliabilityRateLimitKillWhileWaiting: the same (with an 8 s reset,
// so that all of them wait at once) with the supervisor SIGKILLed while
// they wait and started again on the same socket:
// each still resumes, once, within reset + 5 s of its reset, on the same
// session, and ends DONE.
func TestReliabilityRateLimitKillWhileWaiting(t *testing.T) {
	rateLimitTrial(t, true)
}

// watchWaiting lists c's runtimes every 50 ms until the test ends and
// returns whether a runtime was seen running with waiting_reason
// rate_limit and rate_limited_until.
func watchWaiting(t *testing.T, c *client.Client) (seen func(id string) bool) {
	var mu sync.Mutex
	ids := map[string]bool{}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			l, err := c.List(ctx)
			cancel()
			if err != nil {
				continue
			}
			mu.Lock()
			for _, rt := range l {
				if rt.Status == "running" && rt.WaitingReason == "rate_limit" && rt.RateLimitedUntil != "" {
					ids[rt.RuntimeID] = true
				}
			}
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { close(done); <-stopped })
	return func(id string) bool {
		mu.Lock()
		defer mu.Unlock()
		return ids[id]
	}
}

func rateLimitTrial(t *testing.T, kill bool) {
	w := newWorld(t)
	n := rateLimitRuntimes()
	args := []string{"--linger", "30s", "--max-runtimes", "64"}
	s := w.startStable("st", nil, args...)
	c := s.client()
	seen := watchWaiting(t, s.client())
	yes, capMax := true, 2
	var rts, capped []client.Spawned
	reset := rateLimitReset
	if kill {
		reset = killReset
	}
	for range n {
		rts = append(rts, spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, WaitOnRateLimit: &yes,
			Prompt: fmt.Sprintf("announce\nratelimit %s\nsay done", reset)}))
	}
	if !kill {
		for range rateLimitCapped {
			capped = append(capped, spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, WaitOnRateLimit: &yes,
				MaxRateLimitResumes: &capMax, Prompt: "announce\nratelimit 300ms times=9\nsay done"}))
		}
	}
	// While they wait: running, waiting_reason and rate_limited_until.
	for _, sp := range rts {
		if !waitFor(30*time.Second, func() bool { return seen(sp.RuntimeID) }) {
			t.Fatalf("%s was never listed running with waiting_reason rate_limit and rate_limited_until", sp.RuntimeID)
		}
	}
	if kill {
		// Every wait is in the durable record before the kill.
		state := filepath.Join(stable.StateDirFor(filepath.Join(w.state, "avenor"), s.sock), stable.StateFileName)
		if !waitFor(10*time.Second, func() bool {
			b, _ := os.ReadFile(state)
			return strings.Count(string(b), `"rate_limit":`) >= n
		}) {
			t.Fatalf("the waits did not reach the state file")
		}
		s.signal(syscall.SIGKILL)
		s.wait()
		s = w.startStable("st", nil, args...)
		c = s.client()
	}
	var delays []time.Duration
	for _, sp := range rts {
		waitEnded(t, c, sp.RuntimeID, 30*time.Second)
		evs := checkStream(t, sp.OnEvent, sp.RuntimeID)
		waits := only(evs, "avenor.rate_limit.wait")
		if len(waits) != 1 {
			t.Errorf("%s: %d waits, want 1", sp.RuntimeID, len(waits))
			continue
		}
		if got := said(evs); strings.Join(got, ",") != "turn 1,turn 2,done" {
			t.Errorf("%s: said %q, want the prompt sent again exactly once on the same session", sp.RuntimeID, got)
		}
		if ends := only(evs, "session.end"); len(ends) != 1 || ends[0].str("stop_reason") != "end_turn" {
			t.Errorf("%s: session.end %v, want one, end_turn", sp.RuntimeID, ends)
		}
		if len(only(evs, "avenor.turn.start")) != 1 {
			t.Errorf("%s: more than one avenor.turn.start for one turn", sp.RuntimeID)
		}
		if sent := readFile(t, sp.SentinelFile); !strings.HasPrefix(sent, "DONE\n") || !strings.Contains(sent, "SESSION="+sp.SessionID+"\n") {
			t.Errorf("%s: sentinel %q, want DONE on session %s", sp.RuntimeID, sent, sp.SessionID)
		}
		until, err := time.Parse(time.RFC3339Nano, waits[0].str("until"))
		if err != nil {
			t.Errorf("%s: until %q: %v", sp.RuntimeID, waits[0].str("until"), err)
			continue
		}
		for _, ev := range only(evs, "agent.message_chunk") {
			if strings.Contains(fmt.Sprint(ev["content"]), "turn 2") {
				ts, _ := ev.num("ts")
				d := time.UnixMilli(int64(ts)).Sub(until)
				delays = append(delays, d)
				if d > 5*time.Second || d < -50*time.Millisecond {
					t.Errorf("%s: resumed %v after its reset, want within 0–5 s", sp.RuntimeID, d)
				}
			}
		}
	}
	for _, sp := range capped {
		waitEnded(t, c, sp.RuntimeID, 30*time.Second)
		evs := checkStream(t, sp.OnEvent, sp.RuntimeID)
		if w := len(only(evs, "avenor.rate_limit.wait")); w != capMax {
			t.Errorf("%s: %d waits, want %d (the cap)", sp.RuntimeID, w, capMax)
		}
		end := lastSessionEnd(t, evs)
		if end.str("stop_reason") != "error" || end.str("error_code") != "rate_limited" {
			t.Errorf("%s: session.end %v, want error with error_code rate_limited", sp.RuntimeID, end)
		}
		if sent := readFile(t, sp.SentinelFile); !strings.HasPrefix(sent, "FAILED\n") {
			t.Errorf("%s: sentinel %q, want FAILED", sp.RuntimeID, sent)
		}
	}
	sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
	if len(delays) > 0 {
		t.Logf("%d runtimes (kill -9 while waiting: %v): resumed after the reset p50 %v max %v; re-sends per runtime: 1 each (%d in all); capped runtimes: %d, %d resumes each",
			len(delays), kill, delays[len(delays)/2].Round(time.Millisecond), delays[len(delays)-1].Round(time.Millisecond), len(delays), len(capped), capMax)
	}
	if err := c.Shutdown(ctxT(t, 10*time.Second), "graceful"); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	s.exited(0, 20*time.Second)
}
