package hosttest

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// The turn watchdog (docs/unattended.md) as a harness sees it: a hung tool
// call or a quiet turn fires an avenor.watchdog event with its evidence
// within its threshold + 5 s, then warns, cancels (130) or restarts on the
// same session; a busy tool is never judged hung.

// watchdogRun runs script with the watchdog flags and returns the result,
// the events and the run's sentinel path.
func watchdogRun(t *testing.T, env []string, script string, flags ...string) (result, []event, string) {
	t.Helper()
	w := newWorld(t)
	evPath, sentPath := w.path("events.ndjson"), w.path("run.done")
	args := append([]string{"--backend", "scripted", "--prompt", script, "--on-event", evPath,
		"--sentinel-file", sentPath, "--run-id", "feedfacecafe0040"}, flags...)
	res := w.runEnv(env, args...)
	return res, readEvents(t, evPath), sentPath
}

// firstOf is the first event named name after index from; -1 when none.
func firstOf(evs []event, name string, from int) int {
	for i := from; i < len(evs); i++ {
		if evs[i].name() == name {
			return i
		}
	}
	return -1
}

func tsOf(e event) time.Time {
	ms, _ := e.num("ts")
	return time.UnixMilli(int64(ms))
}

// evidenceOf is a watchdog event's evidence.
func evidenceOf(t *testing.T, e event) map[string]any {
	t.Helper()
	ev, ok := e["evidence"].(map[string]any)
	if !ok {
		t.Fatalf("avenor.watchdog has no evidence object: %v", e)
	}
	return ev
}

// lastEventNames are the event names of an evidence's last_events.
func lastEventNames(ev map[string]any) []string {
	var out []string
	list, _ := ev["last_events"].([]any)
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			s, _ := m["event"].(string)
			out = append(out, s)
		}
	}
	return out
}

// subtreeComms are the comm of the processes of an evidence's subtree,
// each checked to have gained no CPU and no I/O over the window.
func subtreeComms(t *testing.T, ev map[string]any) []string {
	t.Helper()
	var out []string
	list, _ := ev["subtree"].([]any)
	for _, p := range list {
		m, _ := p.(map[string]any)
		comm, _ := m["comm"].(string)
		out = append(out, comm)
		if cpu, _ := m["cpu_ms"].(float64); cpu != 0 {
			t.Errorf("hung subtree process %s gained %v ms of CPU over the window", comm, cpu)
		}
		if io, _ := m["io_bytes"].(float64); io != 0 {
			t.Errorf("hung subtree process %s gained %v bytes of I/O over the window", comm, io)
		}
	}
	return out
}

// TestWatchdogCatchesHungTurns: each fault is caught within its threshold
// + 5 s, the turn is cancelled (130, KILLED), and the event's evidence says
// why: the idle subtree, the last events.
func TestWatchdogCatchesHungTurns(t *testing.T) {
	t.Parallel()
	const threshold = 2 * time.Second
	cases := []struct {
		name   string
		script string
		flags  []string
		env    []string
		kind   string
		// since is the event the hang is measured from.
		since string
		// comms must all be in the evidence's subtree (kind tool).
		comms []string
		// last must be among the evidence's last events.
		last string
	}{
		{name: "a tool whose subtree sleeps idle", script: "say hi\ntoolproc idle\nsay never",
			flags: []string{"--tool-timeout", "2s"}, kind: "tool", since: "tool.call", comms: []string{"sleep"}, last: "tool.call"},
		{name: "a stuck grandchild of a tool", script: "say hi\ntoolproc grandchild\nsay never",
			flags: []string{"--tool-timeout", "2s"}, kind: "tool", since: "tool.call", comms: []string{"sh", "sleep"}, last: "tool.call"},
		{name: "a plugin that stops sending", script: "say hi\nsleep 10m",
			flags: []string{"--progress-timeout", "2s"}, kind: "progress", since: "agent.message_chunk", last: "agent.message_chunk"},
		{name: "a runtime that stops answering after a permission", script: "say hi\npermission tool=bash\nsleep 10m",
			flags: []string{"--progress-timeout", "2s", "--auto-approve"}, kind: "progress", since: "permission.response", last: "permission.response"},
		{name: "a tool with no process of its own falls back to the progress rule", script: "say hi\ntoolproc none",
			flags: []string{"--tool-timeout", "2s"}, kind: "progress", since: "tool.call", last: "tool.call"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, evs, sent := watchdogRun(t, tc.env, tc.script, append([]string{"--watchdog", "cancel"}, tc.flags...)...)
			if res.code != 130 {
				t.Fatalf("want exit 130 (the watchdog cancelled the turn); got %v", res)
			}
			if !strings.Contains(res.stderr, "avenor: watchdog: ") || !strings.Contains(res.stderr, "cancelling the turn") {
				t.Errorf("stderr does not say the watchdog cancelled the turn: %q", res.stderr)
			}
			wi := firstOf(evs, "avenor.watchdog", 0)
			if wi < 0 {
				t.Fatalf("no avenor.watchdog event in %v", names(evs))
			}
			dog := evs[wi]
			if dog.str("kind") != tc.kind || dog.str("action") != "cancel" {
				t.Errorf("avenor.watchdog kind %q action %q, want %q cancel: %v", dog.str("kind"), dog.str("action"), tc.kind, dog)
			}
			from := -1
			for i := wi - 1; i >= 0; i-- {
				if evs[i].name() == tc.since {
					from = i
					break
				}
			}
			if from < 0 {
				t.Fatalf("no %s before the watchdog event: %v", tc.since, names(evs))
			}
			detect := tsOf(dog).Sub(tsOf(evs[from]))
			t.Logf("%s: detection time %v (threshold %v)", tc.name, detect, threshold)
			if detect < threshold || detect > threshold+5*time.Second {
				t.Errorf("fired %v after the hang began, want within [%v, %v]", detect, threshold, threshold+5*time.Second)
			}
			if idle, _ := dog.num("idle_for_ms"); time.Duration(idle)*time.Millisecond < threshold {
				t.Errorf("idle_for_ms %v is below the threshold", idle)
			}
			ev := evidenceOf(t, dog)
			if got := lastEventNames(ev); !contains(got, tc.last) {
				t.Errorf("evidence's last events %v lack %s", got, tc.last)
			}
			if tc.kind == "tool" || tc.since == "tool.call" {
				id := dog.str("tool")
				if id == "" || id != evs[from].str("toolCallId") {
					t.Errorf("tool = %q, want the hung call's id %q", id, evs[from].str("toolCallId"))
				}
			}
			if tc.kind == "tool" {
				comms := subtreeComms(t, ev)
				for _, c := range tc.comms {
					if !contains(comms, c) {
						t.Errorf("evidence subtree %v lacks %s", comms, c)
					}
				}
			}
			if _, ok := ev["plugin_pid"].(float64); !ok {
				t.Errorf("evidence has no plugin_pid: %v", ev)
			}
			end := lastSessionEnd(t, evs)
			if end.str("stop_reason") != "cancelled" {
				t.Errorf("session.end stop_reason %q, want cancelled", end.str("stop_reason"))
			}
			if body := readFile(t, sent); !strings.HasPrefix(body, "KILLED\n") || !strings.Contains(body, "EXIT_CODE=130") {
				t.Errorf("sentinel %q, want KILLED with exit 130", body)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestWatchdogWarnLetsTheTurnGoOn: warn writes the event and the turn
// ends on its own, exit 0.
func TestWatchdogWarnLetsTheTurnGoOn(t *testing.T) {
	t.Parallel()
	res, evs, _ := watchdogRun(t, nil, "toolproc idle for=3s\nsay done", "--tool-timeout", "1s", "--watchdog", "warn")
	if res.code != 0 {
		t.Fatalf("want exit 0; got %v", res)
	}
	dogs := only(evs, "avenor.watchdog")
	if len(dogs) != 1 || dogs[0].str("action") != "warn" || dogs[0].str("kind") != "tool" {
		t.Fatalf("want one tool warning, got %v", dogs)
	}
	if end := lastSessionEnd(t, evs); end.str("stop_reason") != "end_turn" || end.str("final_output") != "done" {
		t.Errorf("session.end %v, want end_turn with the turn's output", end)
	}
}

// TestWatchdogRestartResumesTheSession: restart resumes the same session
// id in a fresh process with a note, at most --watchdog-restarts times;
// the next firing cancels the turn (130).
func TestWatchdogRestartResumesTheSession(t *testing.T) {
	t.Parallel()
	// The note is not a script: the resumed session hangs again.
	env := []string{"SCRIPTED_PROSE_SCRIPT=announce\ntoolproc idle"}
	res, evs, _ := watchdogRun(t, env, "announce\ntoolproc grandchild", "--tool-timeout", "1s", "--watchdog", "restart", "--watchdog-restarts", "2")
	if res.code != 130 {
		t.Fatalf("want exit 130 once the restarts are used up; got %v", res)
	}
	dogs := only(evs, "avenor.watchdog")
	if len(dogs) != 3 {
		t.Fatalf("want 3 firings (2 restarts, then a cancel), got %d: %v", len(dogs), names(evs, "agent.status"))
	}
	for i, d := range dogs[:2] {
		if n, _ := d.num("restart"); d.str("action") != "restart" || int(n) != i+1 {
			t.Errorf("firing %d: action %q restart %v, want restart %d", i+1, d.str("action"), d["restart"], i+1)
		}
	}
	if last := dogs[2]; last.str("action") != "cancel" || last["restarts_exhausted"] != true {
		t.Errorf("third firing %v, want cancel with restarts_exhausted", last)
	}
	restarted := only(evs, "avenor.restarted")
	if len(restarted) != 2 {
		t.Fatalf("want 2 avenor.restarted, got %v", restarted)
	}
	for _, r := range restarted {
		if r.str("reason") != "watchdog" {
			t.Errorf("avenor.restarted reason %q, want watchdog", r.str("reason"))
		}
	}
	starts := only(evs, "session.start")
	if len(starts) != 3 {
		t.Fatalf("want 3 session.start (the first and 2 restarts), got %d", len(starts))
	}
	id := starts[0].str("session_id")
	for _, e := range evs {
		if sid := e.str("session_id"); sid != id {
			t.Errorf("%s has session_id %q, want the one session %q", e.name(), sid, id)
		}
	}
	var turns []string
	for _, e := range only(evs, "agent.message_chunk") {
		if c, ok := e["content"].(map[string]any); ok {
			s, _ := c["text"].(string)
			turns = append(turns, s)
		}
	}
	if strings.Join(turns, ",") != "turn 1,turn 2,turn 3" {
		t.Errorf("the session's turns said %v, want turn 1..3 of one session", turns)
	}
	if n := len(only(evs, "session.end")); n != 1 {
		t.Errorf("want one session.end (the stopped turns have none), got %d", n)
	}
}

// TestProgressTimeoutWithoutWatchdogIsUnchanged: without --watchdog,
// --progress-timeout ends a quiet turn exactly as before: the same events,
// progress_timeout, 124, TIMEOUT, and no avenor.watchdog.
func TestProgressTimeoutWithoutWatchdogIsUnchanged(t *testing.T) {
	t.Parallel()
	// The log is the one the code before the watchdog wrote for this
	// script, event for event.
	res, evs, sent := watchdogRun(t, nil, "say hi\ntool look\nsleep 10s", "--progress-timeout", "1s")
	if res.code != 124 || res.stderr != "" {
		t.Fatalf("want exit 124 and nothing on stderr; got %v", res)
	}
	got := strings.Join(names(evs), " ")
	want := "session.start avenor.turn.start agent.message_chunk agent.status tool.call tool.call_update agent.status session.end"
	if got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
	end := lastSessionEnd(t, evs)
	// The text before a tool call is not the final output.
	if _, has := end["final_output"]; end.str("stop_reason") != "progress_timeout" || has {
		t.Errorf("session.end %v", end)
	}
	checkSentinel(t, sent, sentinelBytes("TIMEOUT", sessionOf(t, evs), "progress_timeout", 124, "feedfacecafe0040"))
}

// busyTools is how many busy tool subtrees TestWatchdogNeverFiresOnBusyTools
// runs at once (WATCHDOG_BUSY_TOOLS overrides it).
func busyTools(t *testing.T) int {
	if s := os.Getenv("WATCHDOG_BUSY_TOOLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 256 {
			t.Fatalf("WATCHDOG_BUSY_TOOLS=%q: want 1..256", s)
		}
		return n
	}
	return 50
}

// TestWatchdogNeverFiresOnBusyTools: tool calls whose subtrees stay busy
// — CPU only, I/O only, and 50 at once, both kinds — are never judged hung
// however far past a short threshold they run: 0 false positives.
func TestWatchdogNeverFiresOnBusyTools(t *testing.T) {
	t.Parallel()
	n := busyTools(t)
	cases := []struct{ name, script string }{
		{"cpu only", "toolproc busy-cpu for=8s\nsay done"},
		{"io only", "toolproc busy-io for=8s\nsay done"},
		{fmt.Sprintf("%d at once", n), fmt.Sprintf("toolproc busy n=%d for=10s\nsay done", n)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, evs, _ := watchdogRun(t, nil, tc.script, "--tool-timeout", "2s", "--progress-timeout", "3s", "--watchdog", "cancel")
			dogs := only(evs, "avenor.watchdog")
			t.Logf("%s: false positives: %d over %d tool calls (%v)", tc.name, len(dogs), len(only(evs, "tool.call")), res.elapsed.Round(time.Millisecond))
			if len(dogs) != 0 {
				t.Fatalf("the watchdog fired on a busy tool: %v", dogs[0])
			}
			if res.code != 0 {
				t.Fatalf("want exit 0; got %v", res)
			}
			if got := len(only(evs, "tool.call_update")); got != len(only(evs, "tool.call")) {
				t.Errorf("%d tool calls ended of %d", got, len(only(evs, "tool.call")))
			}
		})
	}
}

// TestWatchdogBadInput: bad watchdog settings are refused before the run
// starts: exit 1, a FAILED sentinel, a message naming the setting and the
// fix.
func TestWatchdogBadInput(t *testing.T) {
	t.Parallel()
	cases := []badRunCase{
		{name: "unparsable tool timeout", flags: []string{"--tool-timeout", "soon", "--watchdog", "cancel"}, want: `invalid argument "soon" for "--tool-timeout"`, code: 2},
		{name: "unparsable tool timeout in the config", config: "watchdog = \"cancel\"\ntool_timeout = \"soon\"\n", want: "tool_timeout: invalid duration"},
		{name: "unparsable restarts", flags: []string{"--tool-timeout", "5s", "--watchdog", "restart", "--watchdog-restarts", "two"}, want: `invalid argument "two"`, code: 2},
		{name: "negative tool timeout", flags: []string{"--tool-timeout", "-5s", "--watchdog", "cancel"}, want: "negative"},
		{name: "negative progress timeout", flags: []string{"--progress-timeout", "-5s", "--watchdog", "cancel"}, want: "negative"},
		{name: "unknown action", flags: []string{"--tool-timeout", "5s", "--watchdog", "explode"}, want: `--watchdog "explode" is not an action: use warn, cancel or restart`},
		{name: "unknown action in the config", config: "watchdog = \"explode\"\ntool_timeout = \"5s\"\n", want: `--watchdog "explode" is not an action`},
		{name: "tool timeout without an action", flags: []string{"--tool-timeout", "5s"}, want: "--tool-timeout needs --watchdog warn, cancel or restart"},
		{name: "an action with nothing to watch", flags: []string{"--watchdog", "warn"}, want: "has nothing to watch"},
		{name: "negative restarts", flags: []string{"--tool-timeout", "5s", "--watchdog", "restart", "--watchdog-restarts", "-1"}, want: "negative"},
		{name: "too many restarts", flags: []string{"--tool-timeout", "5s", "--watchdog", "restart", "--watchdog-restarts", "1000"}, want: "--watchdog-restarts 1000 is out of range"},
		{name: "restart on a backend that cannot resume", flags: []string{"--tool-timeout", "5s", "--watchdog", "restart"},
			env: []string{"SCRIPTED_RESUME_SCOPE=in_process"}, want: "--watchdog restart: the backend cannot resume a session in a fresh plugin process"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkBadRun(t, "feedfacecafe0041", tc)
		})
	}
}

// TestStableSpawnWatchdog: a spawn's watchdog params reach its runtime,
// whose status shows the firing (kind, tool, action); bad ones are
// refused with -32602 before anything runs.
func TestStableSpawnWatchdog(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	c := w.startStable("watchdog", nil).client()
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "toolproc idle for=3s\nsay done",
		Watchdog: "warn", ToolTimeout: "1s", ProgressTimeout: 30})
	rt := waitEnded(t, c, sp.RuntimeID, 30*time.Second)
	var dog map[string]any
	if err := json.Unmarshal(rt.Watchdog, &dog); err != nil {
		t.Fatalf("status has no watchdog object: %s", rt.Raw)
	}
	if dog["kind"] != "tool" || dog["action"] != "warn" || dog["tool"] == "" || dog["count"] != 1.0 {
		t.Errorf("status watchdog = %v, want one tool warning", dog)
	}
	if rt.ExitCode == nil || *rt.ExitCode != 0 {
		t.Errorf("a warning ended the run: %s", rt.Raw)
	}
	if n := len(only(readEvents(t, rt.EventPath), "avenor.watchdog")); n != 1 {
		t.Errorf("%d avenor.watchdog events, want 1", n)
	}

	for _, bad := range []struct {
		p    client.SpawnParams
		want string
	}{
		{client.SpawnParams{Watchdog: "explode", ToolTimeout: "1s"}, `watchdog "explode" is not an action`},
		{client.SpawnParams{Watchdog: "cancel", ToolTimeout: "soon"}, "tool_timeout"},
		{client.SpawnParams{Watchdog: "cancel", ProgressTimeout: -3}, "progress_timeout"},
		{client.SpawnParams{Watchdog: "restart", ToolTimeout: "1s", WatchdogRestarts: client.Int(21)}, "watchdog_restarts 21 is out of range"},
		{client.SpawnParams{ToolTimeout: "1s"}, "tool_timeout needs watchdog"},
		{client.SpawnParams{Watchdog: "warn"}, "has nothing to watch"},
	} {
		p := bad.p
		p.Backend, p.Dir, p.Prompt = "scripted", w.work, "say hi"
		_, err := c.Spawn(ctxT(t, 30*time.Second), p)
		if re := rpcError(t, err); re.Code != -32602 || !strings.Contains(re.Error(), bad.want) {
			t.Errorf("spawn %+v: %v, want -32602 with %q", bad.p, re, bad.want)
		}
	}
}
