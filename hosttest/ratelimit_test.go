package hosttest

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// Rate limits and quota windows (docs/unattended.md#rate-limits) through
// avenor run and a stable spawn, driven by the scripted backend's
// ratelimit and account steps.

// said lists the text of a log's message chunks.
func said(evs []event) []string {
	var out []string
	for _, ev := range only(evs, "agent.message_chunk") {
		content, _ := ev["content"].(map[string]any)
		s, _ := content["text"].(string)
		out = append(out, s)
	}
	return out
}

// TestRateLimitRunWaitsAndResumes: avenor run --wait-on-rate-limit waits
// in process for the reset and sends the prompt again on the same session:
// one avenor.turn.start, one avenor.rate_limit.wait, no avenor.error, one
// session.end (end_turn) after the resume, DONE.
func TestRateLimitRunWaitsAndResumes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evPath, sentPath := w.path("events.ndjson"), w.path("run.done")
	res := w.run("--backend", "scripted", "--prompt", "announce\nratelimit 2s\nsay done", "--wait-on-rate-limit",
		"--on-event", evPath, "--sentinel-file", sentPath)
	if res.code != 0 {
		t.Fatalf("want exit 0; got %v", res)
	}
	if res.elapsed < 2*time.Second {
		t.Errorf("run took %v, less than the 2 s reset", res.elapsed)
	}
	evs := readEvents(t, evPath)
	want := []string{"session.start", "avenor.turn.start", "agent.message_chunk", "avenor.rate_limit.wait",
		"agent.message_chunk", "agent.message_chunk", "session.end"}
	if got := names(evs, "agent.status"); !slices.Equal(got, want) {
		t.Fatalf("events:\n got %v\nwant %v", got, want)
	}
	wait := only(evs, "avenor.rate_limit.wait")[0]
	if wait["attempt"] != 1.0 || wait["max_resumes"] != 5.0 || wait.str("until") == "" {
		t.Errorf("avenor.rate_limit.wait = %v, want attempt 1, max_resumes 5 and until", wait)
	}
	if got := said(evs); !slices.Equal(got, []string{"turn 1", "turn 2", "done"}) {
		t.Errorf("said %q: want the prompt sent again once, on the same session (turn 2)", got)
	}
	end := lastSessionEnd(t, evs)
	if end.str("stop_reason") != "end_turn" || end["error_code"] != nil {
		t.Errorf("session.end = %v, want end_turn without an error code", end)
	}
	if s := readFile(t, sentPath); !strings.HasPrefix(s, "DONE\n") {
		t.Errorf("sentinel %q, want DONE", s)
	}
}

// TestRateLimitRunCapEndsWithError: past --max-rate-limit-resumes the turn
// ends with the error: avenor.error and session.end carry the code
// rate_limited and the reset, the sentinel says FAILED, exit 1.
func TestRateLimitRunCapEndsWithError(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evPath, sentPath := w.path("events.ndjson"), w.path("run.done")
	res := w.run("--backend", "scripted", "--prompt", "announce\nratelimit 100ms times=5\nsay done", "--wait-on-rate-limit",
		"--max-rate-limit-resumes", "2", "--on-event", evPath, "--sentinel-file", sentPath)
	if res.code != 1 {
		t.Fatalf("want exit 1; got %v", res)
	}
	evs := readEvents(t, evPath)
	if n := len(only(evs, "avenor.rate_limit.wait")); n != 2 {
		t.Errorf("%d waits, want 2 (the cap)", n)
	}
	if got := said(evs); !slices.Equal(got, []string{"turn 1", "turn 2", "turn 3"}) {
		t.Errorf("said %q, want three sends: the first and two resumes", got)
	}
	errs := only(evs, "avenor.error")
	if len(errs) != 1 || errs[0].str("code") != "rate_limited" || errs[0].str("rate_limited_until") == "" {
		t.Fatalf("avenor.error = %v, want one with code rate_limited and rate_limited_until", errs)
	}
	end := lastSessionEnd(t, evs)
	if end.str("stop_reason") != "error" || end.str("error_code") != "rate_limited" || end.str("rate_limited_until") == "" {
		t.Errorf("session.end = %v, want stop_reason error, error_code rate_limited, rate_limited_until", end)
	}
	if s := readFile(t, sentPath); !strings.HasPrefix(s, "FAILED\n") || !strings.Contains(s, "STOP_REASON=error\n") {
		t.Errorf("sentinel %q, want FAILED with stop reason error", s)
	}
}

// TestRateLimitWithoutOptionsStreamUnchanged: a run that asked for none of
// the new options sees the stream it always did (contract decision 20):
// the runtime's account usage windows are dropped — the log of a script
// that reports them has the same events as one that does not — and a rate
// limit ends the turn with no wait. With --report-usage they are written.
func TestRateLimitWithoutOptionsStreamUnchanged(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	run := func(name, script string, extra ...string) []event {
		p := w.path(name + ".ndjson")
		w.run(append([]string{"--backend", "scripted", "--prompt", script, "--on-event", p}, extra...)...)
		return readEvents(t, p)
	}
	with := run("with", "say a\naccount 5h 42.5 1h\nsay b\nratelimit 1s\nsay c")
	without := run("without", "say a\nsay b\nratelimit 1s\nsay c")
	want := []string{"session.start", "avenor.turn.start", "agent.message_chunk", "agent.message_chunk",
		"avenor.error", "agent.status", "session.end"}
	for name, evs := range map[string][]event{"with account events": with, "without": without} {
		if got := names(evs); !slices.Equal(got, want) {
			t.Errorf("%s:\n got %v\nwant %v", name, got, want)
		}
	}
	reported := run("reported", "say a\naccount 5h 42.5 1h\nsay b", "--report-usage")
	acc := only(reported, "avenor.usage.account")
	if len(acc) != 1 || acc[0].str("window") != "5h" || acc[0]["used_pct"] != 42.5 || acc[0].str("resets_at") == "" {
		t.Errorf("with --report-usage: avenor.usage.account = %v, want one {window 5h, used_pct 42.5, resets_at}", acc)
	}
}

// TestRateLimitBadInput: a max_rate_limit_resumes out of range or that
// does not parse, and --wait-on-rate-limit on a backend that cannot tell
// when a rate limit lifts, are refused with a clear error before anything
// starts — on avenor run and on a stable spawn.
func TestRateLimitBadInput(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"negative", []string{"--backend", "scripted", "--wait-on-rate-limit", "--max-rate-limit-resumes", "-1"}, 1, "--max-rate-limit-resumes: invalid integer -1: must not be negative"},
		{"too many", []string{"--backend", "scripted", "--max-rate-limit-resumes", "101"}, 1, "--max-rate-limit-resumes 101 is out of range"},
		{"unparsable", []string{"--backend", "scripted", "--max-rate-limit-resumes", "five"}, 2, "invalid argument \"five\""},
		{"backend cannot", []string{"--backend", "echo", "--wait-on-rate-limit"}, 1, "backend echo cannot wait on a rate limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evPath, sentPath := w.path(tc.name+".ndjson"), w.path(tc.name+".done")
			res := w.run(append(tc.args, "--prompt", "say hi", "--on-event", evPath, "--sentinel-file", sentPath)...)
			if res.code != tc.code || !strings.Contains(res.stderr, tc.want) {
				t.Fatalf("want exit %d saying %q; got %v", tc.code, tc.want, res)
			}
			if tc.code == 1 {
				if s := readFile(t, sentPath); !strings.HasPrefix(s, "FAILED\n") {
					t.Errorf("sentinel %q, want FAILED", s)
				}
			}
			for _, ev := range readEventsIfAny(t, evPath) {
				if ev.name() == "session.start" || ev.name() == "avenor.turn.start" {
					t.Errorf("%s was written: something started", ev.name())
				}
			}
		})
	}

	s := w.startStable("st", nil)
	c := s.client()
	neg := -1
	_, err := c.Spawn(ctxT(t, 10*time.Second), client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say hi", MaxRateLimitResumes: &neg})
	if re := rpcError(t, err); re.Code != -32602 || !strings.Contains(err.Error(), "max_rate_limit_resumes -1 is out of range") {
		t.Errorf("spawn with max_rate_limit_resumes -1: %v, want -32602 naming it", err)
	}
	yes := true
	_, err = c.Spawn(ctxT(t, 10*time.Second), client.SpawnParams{Backend: "echo", Dir: w.work, Prompt: "hi", WaitOnRateLimit: &yes})
	var re *client.RPCError
	if !errors.As(err, &re) || !strings.Contains(re.Message, "backend echo cannot wait on a rate limit") || !strings.Contains(re.Message, "nothing was started") {
		t.Errorf("spawn with wait_on_rate_limit on echo: %v, want a refusal naming the backend", err)
	}
	if l, err := c.List(ctxT(t, 5*time.Second)); err != nil || len(l) != 0 {
		t.Errorf("after refused spawns the supervisor lists %d runtimes (%v), want none", len(l), err)
	}
}

// readEventsIfAny is readEvents of a log that may not have been created
// (a run refused before it opened its log): none then.
func readEventsIfAny(t *testing.T, path string) []event {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	return readEvents(t, path)
}

// TestRateLimitStableWaitHoldsNoSlot: a runtime waiting on a rate limit
// holds no executing slot of --max-runtimes (a spawn while both slots'
// runtimes wait is admitted and runs), is not reaped by --parked-timeout,
// and keeps --idle-timeout from stopping the supervisor with no control
// connection open; both waiting runtimes resume and end DONE.
func TestRateLimitStableWaitHoldsNoSlot(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.startStable("st", nil, "--max-runtimes", "2", "--idle-timeout", "1s", "--parked-timeout", "1s")
	yes := true
	var waiting []client.Spawned
	for range 2 {
		var sp client.Spawned
		p := client.SpawnParams{Backend: "scripted", Dir: w.work, WaitOnRateLimit: &yes, Prompt: "announce\nratelimit 5s\nsay done"}
		if err := client.CallOnce(s.sock, "spawn", p, &sp, 10*time.Second); err != nil {
			t.Fatalf("spawn: %v", err)
		}
		waiting = append(waiting, sp)
	}
	c := s.client()
	for _, sp := range waiting {
		waitRuntime(t, c, sp.RuntimeID, 10*time.Second, "waiting on its rate limit", func(rt client.Runtime) bool {
			return rt.Status == "running" && rt.WaitingReason == "rate_limit"
		})
	}
	third := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say hi"})
	if rt := waitEnded(t, c, third.RuntimeID, 10*time.Second); rt.StopReason != "end_turn" {
		t.Errorf("the spawn admitted while two runtimes wait: %s, want end_turn", rt.Raw)
	}
	c.Close()
	time.Sleep(2 * time.Second) // past --idle-timeout and --parked-timeout, no connection open
	if processGone(s.pid()) {
		t.Fatalf("the supervisor stopped for --idle-timeout while runtimes waited on a rate limit: %s", tail(s.stderr.String(), 1000))
	}
	for _, sp := range waiting {
		if !waitFor(15*time.Second, func() bool { b, _ := os.ReadFile(sp.SentinelFile); return len(b) > 0 }) {
			t.Fatalf("%s: no sentinel", sp.RuntimeID)
		}
		if sent := readFile(t, sp.SentinelFile); !strings.HasPrefix(sent, "DONE\n") {
			t.Errorf("%s: sentinel %q, want DONE after its resume", sp.RuntimeID, sent)
		}
	}
	s.exited(0, 20*time.Second) // idle now: it stops on its own
}

// TestRateLimitRosterKey: a roster entry's wait_on_rate_limit and
// max_rate_limit_resumes apply to the run it is the loadout of.
func TestRateLimitRosterKey(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	roster := w.writeFile("roster.json", `{"patient": {"backend": "scripted", "model": "m", "wait_on_rate_limit": true, "max_rate_limit_resumes": 1}}`)
	evPath := w.path("events.ndjson")
	res := w.run("--roster-file", roster, "--roster-entry", "patient", "--prompt", "announce\nratelimit 100ms times=3\nsay done", "--on-event", evPath)
	if res.code != 1 {
		t.Fatalf("want exit 1 (limited past the entry's one resume); got %v", res)
	}
	evs := readEvents(t, evPath)
	if n := len(only(evs, "avenor.rate_limit.wait")); n != 1 {
		t.Errorf("%d waits, want the entry's max_rate_limit_resumes 1", n)
	}
	if end := lastSessionEnd(t, evs); end.str("error_code") != "rate_limited" {
		t.Errorf("session.end %v, want error_code rate_limited", end)
	}
}
