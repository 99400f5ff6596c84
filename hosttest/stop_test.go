package hosttest

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTimeouts: --timeout and --progress-timeout end the run with 124, a
// TIMEOUT sentinel and a session.end carrying the reason and what the
// runtime said so far (docs/cli.md#avenor-run, docs/events.md#host-events, docs/run.md#sentinel).
func TestTimeouts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		script  string
		flags   []string
		code    int
		stop    string
		final   string
		atLeast time.Duration
		below   time.Duration
	}{
		{name: "timeout", script: "say hi\nsleep 10s", flags: []string{"--timeout", "1s"},
			code: 124, stop: "timeout", final: "hi", atLeast: time.Second, below: 5 * time.Second},
		{name: "progress_timeout", script: "say hi\nsleep 10s", flags: []string{"--progress-timeout", "700ms"},
			code: 124, stop: "progress_timeout", final: "hi", atLeast: 700 * time.Millisecond, below: 5 * time.Second},
		{name: "progress keeps the watchdog quiet", script: "chunks 5 every=300ms text=x",
			flags: []string{"--progress-timeout", "1500ms"},
			code:  0, stop: "end_turn", final: "xxxxx", atLeast: 1100 * time.Millisecond, below: 10 * time.Second},
		{name: "timeout wins over a later sleep", script: "say hi\nsleep 3s", flags: []string{"--timeout", "1s", "--progress-timeout", "30s"},
			code: 124, stop: "timeout", final: "hi", atLeast: time.Second, below: 2900 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			evPath, sentPath := w.path("events.ndjson"), w.path("run.done")
			const runID = "deadbeefcafe0124"
			from := time.Now()
			args := append([]string{"--backend", "scripted", "--prompt", tc.script,
				"--on-event", evPath, "--sentinel-file", sentPath, "--run-id", runID}, tc.flags...)
			res := w.run(args...)
			if res.code != tc.code {
				t.Fatalf("want exit %d; got %v", tc.code, res)
			}
			if res.elapsed < tc.atLeast || res.elapsed >= tc.below {
				t.Errorf("run took %v, want [%v, %v)", res.elapsed, tc.atLeast, tc.below)
			}
			evs := readEvents(t, evPath)
			checkEnvelope(t, evs, runID, from, time.Now())
			id := sessionOf(t, evs)
			end := lastSessionEnd(t, evs)
			if end.str("stop_reason") != tc.stop || end.str("final_output") != tc.final {
				t.Errorf("session.end = %v, want stop_reason %q and final_output %q", end, tc.stop, tc.final)
			}
			status := "DONE"
			if tc.code == 124 {
				status = "TIMEOUT"
			}
			checkSentinel(t, sentPath, sentinelBytes(status, id, tc.stop, tc.code, runID))
			if errs := only(evs, "avenor.error"); len(errs) > 0 {
				t.Errorf("a plugin that honours cancel got avenor.error: %v", errs)
			}
		})
	}
}

// TestTimeoutDuringRetryBackoff: the run clock also bounds the backoff
// between attempts (docs/run.md#retry): exit 124, not a second attempt 2 s later.
func TestTimeoutDuringRetryBackoff(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evPath, sentPath := w.path("events.ndjson"), w.path("run.done")
	res := w.run("--backend", "scripted", "--prompt", "fail x", "--max-retries", "1", "--timeout", "1s",
		"--on-event", evPath, "--sentinel-file", sentPath, "--run-id", "r124")
	if res.code != 124 {
		t.Fatalf("want exit 124; got %v", res)
	}
	if res.elapsed >= 1900*time.Millisecond {
		t.Errorf("run took %v: the 2 s backoff was not cut short by the 1 s timeout", res.elapsed)
	}
	evs := readEvents(t, evPath)
	if got := len(only(evs, "session.start")); got != 1 {
		t.Errorf("%d attempts started, want 1", got)
	}
	if got := len(only(evs, "avenor.retry")); got != 1 {
		t.Errorf("%d avenor.retry events, want 1", got)
	}
	checkSentinel(t, sentPath, sentinelBytes("TIMEOUT", sessionOf(t, evs), "timeout", 124, "r124"))
}

// TestSignals: SIGINT and SIGTERM mid-turn cancel the run: exit 130, a
// KILLED sentinel, session.end{cancelled} last, the runtime process gone.
func TestSignals(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			evPath, sentPath, pidPath := w.path("events.ndjson"), w.path("run.done"), w.path("child.pid")
			const runID = "deadbeefcafe0130"
			from := time.Now()
			p := w.start([]string{"SCRIPTED_CHILD_PIDFILE=" + pidPath},
				"--backend", "scripted", "--prompt", "child 100\nsay a\nsleep 30s",
				"--on-event", evPath, "--sentinel-file", sentPath, "--run-id", runID)
			child := readPidFile(t, pidPath)
			waitForLog(t, evPath, `"agent.message_chunk"`, 10*time.Second)
			sent := time.Now()
			p.signal(sig)
			res := p.wait()
			if res.code != 130 {
				t.Fatalf("want exit 130; got %v", res)
			}
			if d := time.Since(sent); d > 3*time.Second {
				t.Errorf("avenor took %v to end after %v", d, sig)
			}
			evs := readEvents(t, evPath)
			checkEnvelope(t, evs, runID, from, time.Now())
			id := sessionOf(t, evs)
			end := lastSessionEnd(t, evs)
			if end.str("stop_reason") != "cancelled" || end.str("final_output") != "a" {
				t.Errorf("session.end = %v, want stop_reason cancelled and final_output %q", end, "a")
			}
			checkSentinel(t, sentPath, "KILLED\nSESSION="+id+"\nSTOP_REASON=cancelled\nEXIT_CODE=130\nRUN="+runID+"\n")
			requireGone(t, "the runtime child", child, 2*time.Second)
		})
	}
}

// TestCancelIgnored: a plugin whose turn ignores Cancel is killed with its
// runtime after the 5 s cancel budget; the run still ends as a timeout.
func TestCancelIgnored(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evPath, sentPath, pidPath := w.path("events.ndjson"), w.path("run.done"), w.path("child.pid")
	p := w.start([]string{"SCRIPTED_CHILD_PIDFILE=" + pidPath},
		"--backend", "scripted", "--prompt", "ignore-cancel\nchild 100\nsleep 60s", "--timeout", "1s",
		"--on-event", evPath, "--sentinel-file", sentPath, "--run-id", "rign")
	child := readPidFile(t, pidPath)
	plugins := childrenOf(p.pid(), "avenor-plugin-scripted")
	res := p.wait()
	if res.code != 124 {
		t.Fatalf("want exit 124; got %v", res)
	}
	if res.elapsed > 7500*time.Millisecond {
		t.Errorf("run took %v, want about 1 s timeout + 5 s cancel budget", res.elapsed)
	}
	evs := readEvents(t, evPath)
	end := lastSessionEnd(t, evs)
	if end.str("stop_reason") != "timeout" {
		t.Errorf("session.end stop_reason = %q, want timeout", end.str("stop_reason"))
	}
	errs := only(evs, "avenor.error")
	if len(errs) != 1 || errs[0].str("source") != "cancel" ||
		!strings.Contains(errs[0].str("message"), "did not end the cancelled turn") {
		t.Errorf("avenor.error = %v, want one {source: cancel} saying the turn was not ended", errs)
	}
	checkSentinel(t, sentPath, sentinelBytes("TIMEOUT", sessionOf(t, evs), "timeout", 124, "rign"))
	requireGone(t, "the runtime child", child, 2*time.Second)
	for _, pid := range plugins {
		requireGone(t, "the plugin", pid, 2*time.Second)
	}
}

// TestPluginCrash: a plugin that dies mid-turn fails the run (exit 1) with a
// named report, session.end{error} last, and its runtime child killed.
func TestPluginCrash(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evPath, sentPath, pidPath := w.path("events.ndjson"), w.path("run.done"), w.path("child.pid")
	p := w.start([]string{"SCRIPTED_CHILD_PIDFILE=" + pidPath},
		"--backend", "scripted", "--prompt", "child 100\nsay x\ndie",
		"--on-event", evPath, "--sentinel-file", sentPath, "--run-id", "rdie")
	child := readPidFile(t, pidPath)
	res := p.wait()
	if res.code != 1 {
		t.Fatalf("want exit 1; got %v", res)
	}
	evs := readEvents(t, evPath)
	want := []string{"session.start", "avenor.turn.start", "agent.message_chunk", "avenor.error", "session.end"}
	if got := names(evs, "agent.status"); !slices.Equal(got, want) {
		t.Errorf("events: got %v, want %v", got, want)
	}
	errs := only(evs, "avenor.error")
	if len(errs) != 1 || errs[0].str("source") != "backend" ||
		!strings.Contains(errs[0].str("message"), "avenor-plugin-scripted") ||
		!strings.Contains(errs[0].str("message"), "signal: killed") {
		t.Errorf("avenor.error = %v, want {source: backend} naming avenor-plugin-scripted and \"signal: killed\"", errs)
	}
	end := lastSessionEnd(t, evs)
	if end.str("stop_reason") != "error" || end.str("final_output") != "x" {
		t.Errorf("session.end = %v, want stop_reason error, final_output x", end)
	}
	if len(errs) == 1 && !strings.Contains(res.stderr, "avenor: "+errs[0].str("message")+"\n") {
		t.Errorf("stderr does not carry the crash report %q:\n%s", errs[0].str("message"), res.stderr)
	}
	checkSentinel(t, sentPath, sentinelBytes("FAILED", sessionOf(t, evs), "error", 1, "rdie"))
	requireGone(t, "the runtime child", child, 2*time.Second)
}

// TestHostKilled: when avenor itself is SIGKILLed (no chance to clean up),
// its plugin and the plugin's runtime child still go away.
func TestHostKilled(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evPath, pidPath := w.path("events.ndjson"), w.path("child.pid")
	p := w.start([]string{"SCRIPTED_CHILD_PIDFILE=" + pidPath},
		"--backend", "scripted", "--prompt", "child 100\nsay x\nsleep 60s", "--on-event", evPath)
	child := readPidFile(t, pidPath)
	waitForLog(t, evPath, `"agent.message_chunk"`, 10*time.Second)
	plugins := childrenOf(p.pid(), "avenor-plugin-scripted")
	if len(plugins) != 1 {
		t.Fatalf("found plugin processes %v under avenor (pid %d), want one", plugins, p.pid())
	}
	p.signal(syscall.SIGKILL)
	if res := p.wait(); res.code != 128+int(syscall.SIGKILL) {
		t.Fatalf("avenor was not killed: %v", res)
	}
	requireGone(t, "the plugin of a SIGKILLed avenor", plugins[0], 5*time.Second)
	requireGone(t, "the runtime child of a SIGKILLed avenor", child, 5*time.Second)
}
