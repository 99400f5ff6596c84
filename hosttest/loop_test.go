package hosttest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The loop and team runs of docs/loop.md, end to end: the built avenor, the
// scripted plugin as every phase's backend (each phase's prompt is its
// script), one --on-event log and one --sentinel-file per run.

// phase is one phase object of a config.
type phase map[string]any

// writeConfig writes a loop or team config as JSON under the root.
func (w *world) writeConfig(name string, cfg map[string]any) string {
	w.t.Helper()
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		w.t.Fatal(err)
	}
	return w.writeFile(name, string(b))
}

// loopRun is one finished workflow run and what it left.
type loopRun struct {
	res      result
	evs      []event
	sentinel string
}

func (w *world) workflow(runID string, args ...string) loopRun {
	w.t.Helper()
	evPath, sentPath := w.path("events.ndjson"), w.path("run.done")
	from := time.Now()
	res := w.run(append([]string{"--backend", "scripted", "--on-event", evPath, "--sentinel-file", sentPath, "--run-id", runID}, args...)...)
	evs := readEvents(w.t, evPath)
	checkEnvelope(w.t, evs, runID, from, time.Now())
	return loopRun{res: res, evs: evs, sentinel: readFile(w.t, sentPath)}
}

// lifecycle lists the loop/team events: "phase.start test loop 2".
func lifecycle(evs []event) []string {
	var out []string
	for _, ev := range evs {
		switch n := ev.name(); n {
		case "avenor.phase.start", "avenor.phase.end":
			it, _ := ev.num("iteration")
			out = append(out, fmt.Sprintf("%s %s %s %d", strings.TrimPrefix(n, "avenor."), ev.str("phase"), ev.str("kind"), int(it)))
		case "avenor.loop.start", "avenor.loop.end", "avenor.team.start", "avenor.team.end":
			out = append(out, strings.TrimPrefix(n, "avenor."))
		}
	}
	return out
}

// pick keeps the named fields of ev.
func pick(ev event, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		if v, ok := ev[k]; ok {
			out[k] = v
		}
	}
	return out
}

func lastOf(t *testing.T, evs []event, name string) event {
	t.Helper()
	all := only(evs, name)
	if len(all) == 0 {
		t.Fatalf("no %s in %v", name, names(evs, "agent.status"))
	}
	return all[len(all)-1]
}

// saidIn is the message text of the session, in order.
func saidIn(evs []event, session string) string {
	var b strings.Builder
	for _, ev := range only(evs, "agent.message_chunk") {
		if ev.str("session_id") == session {
			c, _ := ev["content"].(map[string]any)
			s, _ := c["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

func equalFields(t *testing.T, what string, got, want map[string]any) {
	t.Helper()
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("%s:\n got %s\nwant %s", what, gb, wb)
	}
}

// TestLoopExitsOnIteration2: build once, then test → review → fix until the
// test phase prints the exit marker on iteration 2.
func TestLoopExitsOnIteration2(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	cfg := w.writeConfig("loop.json", map[string]any{
		"max_iterations": 5,
		"pre":            []phase{{"name": "build", "prompt": `say "built\n"`}},
		"loop": []phase{
			{"name": "test", "prompt": `say "testing {{.Iteration}} of {{.MaxIterations}}\n"` + "\n" +
				`{{if eq .Iteration 2}}say "[loop: exit | tests green]\n"{{else}}say "2 failures\n"{{end}}`},
			// The marker quoted, inside a fence and in inline code never counts.
			{"name": "review", "prompt": `say "> [loop: abort | quoted]\n` + "```" + `\n[loop: abort | fenced]\n` + "```" + `\nprint ` + "`[loop: exit]`" + ` when done\n"`},
			{"name": "fix", "prompt": `say "fixed\n"`},
		},
	})
	run := w.workflow("deadbeefcafe1001", "--loop-file", cfg)
	if run.res.code != 0 {
		t.Fatalf("want exit 0; got %v", run.res)
	}
	want := []string{"loop.start", "phase.start build pre 0", "phase.end build pre 0",
		"phase.start test loop 1", "phase.end test loop 1", "phase.start review loop 1", "phase.end review loop 1",
		"phase.start fix loop 1", "phase.end fix loop 1", "phase.start test loop 2", "phase.end test loop 2", "loop.end"}
	if got := lifecycle(run.evs); !slices.Equal(got, want) {
		t.Fatalf("lifecycle:\n got %q\nwant %q", got, want)
	}
	equalFields(t, "avenor.loop.start", pick(run.evs[0], "event", "max_iterations", "pre_phase_count", "loop_phase_count"),
		map[string]any{"event": "avenor.loop.start", "loop_phase_count": 3, "max_iterations": 5, "pre_phase_count": 1})
	end := lastOf(t, run.evs, "avenor.phase.end")
	session := end.str("session_id")
	equalFields(t, "the deciding avenor.phase.end", pick(end, "phase", "iteration", "kind", "stop_reason", "exit_marker", "exit_marker_label", "abort_marker"),
		map[string]any{"exit_marker": true, "exit_marker_label": "tests green", "iteration": 2, "kind": "loop", "phase": "test", "stop_reason": "end_turn"})
	for _, e := range only(run.evs, "avenor.phase.end") {
		if e.str("phase") == "review" && (e["abort_marker"] != nil || e["exit_marker"] != nil) {
			t.Errorf("a quoted, fenced or inline marker counted: %v", e)
		}
	}
	equalFields(t, "avenor.loop.end", pick(lastOf(t, run.evs, "avenor.loop.end"), "iterations_completed", "exit_reason", "exit_label", "exit_phase", "exit_iteration"),
		map[string]any{"exit_iteration": 2, "exit_label": "tests green", "exit_phase": "test", "exit_reason": "marker", "iterations_completed": 2})
	if n := len(only(run.evs, "session.start")); n != 5 {
		t.Errorf("%d sessions, want 5 (every phase fresh)", n)
	}
	if run.evs[len(run.evs)-1].name() != "avenor.loop.end" {
		t.Errorf("the last event is %s, want avenor.loop.end", run.evs[len(run.evs)-1].name())
	}
	if got := run.sentinel; got != sentinelBytes("DONE", session, "end_turn", 0, "deadbeefcafe1001") {
		t.Errorf("sentinel %q", got)
	}
}

// TestLoopOutcomes: each way a loop ends, its exit code, sentinel and
// loop.end.
func TestLoopOutcomes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		cfg    map[string]any
		code   int
		status string // sentinel: status line, then stop reason and extra lines
		stop   string
		reason string
		end    map[string]any
	}{
		{name: "abort is BLOCKED with its reason",
			cfg: map[string]any{"loop": []phase{
				{"name": "work", "prompt": `say "[loop: exit | maybe]\n"` + "\n" + `say "<|workflow: abort | needs a human: schema change|>\n"`},
				{"name": "never", "prompt": `say "unreachable\n"`}}},
			code: 5, status: "BLOCKED", stop: "blocked", reason: "needs a human: schema change",
			end: map[string]any{"exit_iteration": 1, "exit_label": "needs a human: schema change", "exit_phase": "work", "exit_reason": "abort", "iterations_completed": 1}},
		{name: "max_iterations is DONE",
			cfg:  map[string]any{"max_iterations": 2, "loop": []phase{{"name": "a", "prompt": `say "[loop: continue]\n"`}, {"name": "b", "prompt": `say "b\n"`}}},
			code: 0, status: "DONE", stop: "end_turn",
			end: map[string]any{"exit_reason": "max_iterations", "iterations_completed": 2}},
		{name: "a failing pre phase is FAILED",
			cfg:  map[string]any{"pre": []phase{{"name": "setup", "prompt": "fail cannot build"}}, "loop": []phase{{"name": "a", "prompt": `say "never\n"`}}},
			code: 1, status: "FAILED", stop: "error",
			end: map[string]any{"exit_iteration": 0, "exit_phase": "setup", "exit_reason": "phase_failure", "iterations_completed": 0}},
		{name: "a refusing loop phase is FAILED with its exit code",
			cfg:  map[string]any{"loop": []phase{{"name": "a", "prompt": `say "ok\n"`}, {"name": "b", "prompt": "stop refusal"}}},
			code: 2, status: "FAILED", stop: "refusal",
			end: map[string]any{"exit_iteration": 1, "exit_phase": "b", "exit_reason": "phase_failure", "iterations_completed": 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			run := w.workflow("deadbeefcafe1002", "--loop-file", w.writeConfig("loop.json", c.cfg))
			if run.res.code != c.code {
				t.Fatalf("want exit %d; got %v", c.code, run.res)
			}
			equalFields(t, "avenor.loop.end", pick(lastOf(t, run.evs, "avenor.loop.end"), "iterations_completed", "exit_reason", "exit_label", "exit_phase", "exit_iteration"), c.end)
			session := lastSessionOf(run.evs)
			want := sentinelBytes(c.status, session, c.stop, c.code, "deadbeefcafe1002")
			if c.reason != "" {
				want = strings.Replace(want, "RUN=", "REASON="+c.reason+"\nRUN=", 1)
			}
			if run.sentinel != want {
				t.Errorf("sentinel:\n got %q\nwant %q", run.sentinel, want)
			}
			for _, ev := range only(run.evs, "avenor.phase.start") {
				if ev.str("phase") == "never" {
					t.Errorf("a phase ran after the loop ended: %v", ev)
				}
			}
		})
	}
}

func lastSessionOf(evs []event) string {
	s := ""
	for _, ev := range only(evs, "session.start") {
		s = ev.str("session_id")
	}
	return s
}

// TestLoopCancelled: SIGINT mid-loop ends the phase in flight and the run
// KILLED, 130.
func TestLoopCancelled(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evPath, sentPath := w.path("events.ndjson"), w.path("run.done")
	cfg := w.writeConfig("loop.json", map[string]any{"loop": []phase{
		{"name": "quick", "prompt": `say "done\n"`},
		{"name": "slow", "prompt": `say "working\n"` + "\nsleep 30s"}}})
	p := w.start(nil, "--backend", "scripted", "--loop-file", cfg, "--on-event", evPath, "--sentinel-file", sentPath, "--run-id", "deadbeefcafe1003")
	waitForLog(t, evPath, `"working\n"`, 20*time.Second)
	p.signal(syscall.SIGINT)
	res := p.wait()
	if res.code != 130 || res.elapsed > 20*time.Second {
		t.Fatalf("want exit 130 soon after SIGINT; got %v", res)
	}
	evs := readEvents(t, evPath)
	equalFields(t, "avenor.loop.end", pick(lastOf(t, evs, "avenor.loop.end"), "exit_reason", "iterations_completed"),
		map[string]any{"exit_reason": "cancelled", "iterations_completed": 0})
	slow := lastOf(t, evs, "avenor.phase.end")
	if slow.str("phase") != "slow" || slow.str("stop_reason") != "cancelled" {
		t.Errorf("the phase in flight ended %v, want cancelled", slow)
	}
	checkSentinel(t, sentPath, sentinelBytes("KILLED", slow.str("session_id"), "cancelled", 130, "deadbeefcafe1003"))
}

// TestTeamOfThree: a pre phase skips one conditional member, the other two
// run in parallel, post runs after them.
func TestTeamOfThree(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	cfg := w.writeConfig("team.json", map[string]any{
		"pre": []phase{{"name": "triage", "prompt": `say "docs did not change\n<|team: skip | Docs|>\n"`}},
		"team": []phase{
			{"name": "api", "prompt": "sleep 200ms\nwrite api.txt reviewed"},
			{"name": "db", "prompt": "sleep 200ms\nwrite db.txt reviewed", "conditional": true},
			{"name": "docs", "prompt": "write docs.txt reviewed", "conditional": true},
		},
		"post": []phase{{"name": "summary", "prompt": "shell cat api.txt db.txt"}},
	})
	run := w.workflow("deadbeefcafe1004", "--team-file", cfg, "--dir", w.work)
	if run.res.code != 0 {
		t.Fatalf("want exit 0; got %v", run.res)
	}
	for file, want := range map[string]bool{"api.txt": true, "db.txt": true, "docs.txt": false} {
		if _, err := os.Stat(filepath.Join(w.work, file)); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", file, err == nil, want)
		}
	}
	equalFields(t, "avenor.team.start", pick(run.evs[0], "event", "pre_phase_count", "team_member_count", "post_phase_count"),
		map[string]any{"event": "avenor.team.start", "post_phase_count": 1, "pre_phase_count": 1, "team_member_count": 3})
	equalFields(t, "avenor.team.end", pick(lastOf(t, run.evs, "avenor.team.end"), "exit_reason", "members_completed", "members_aborted", "members_skipped"),
		map[string]any{"exit_reason": "end_turn", "members_aborted": 0, "members_completed": 2, "members_skipped": []string{"docs"}})
	lc := lifecycle(run.evs)
	if lc[1] != "phase.start triage pre 0" || lc[len(lc)-3] != "phase.start summary post 0" {
		t.Errorf("lifecycle %q", lc)
	}
	// The members overlapped: both started before either ended.
	var order []string
	for _, l := range lc {
		if strings.HasSuffix(l, " team 0") {
			order = append(order, strings.Fields(l)[0])
		}
	}
	if !slices.Equal(order, []string{"phase.start", "phase.start", "phase.end", "phase.end"}) {
		t.Errorf("members did not run in parallel: %q", lc)
	}
	if !strings.HasPrefix(run.sentinel, "DONE\n") {
		t.Errorf("sentinel %q", run.sentinel)
	}
}

// TestTeamAbort: the first member's abort cancels the others, skips post:
// BLOCKED, 5.
func TestTeamAbort(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	cfg := w.writeConfig("team.json", map[string]any{
		"team": []phase{
			{"name": "slow", "prompt": "sleep 30s"},
			{"name": "blocked", "prompt": `say "<|workflow: abort | auth service unavailable|>\n"`},
		},
		"post": []phase{{"name": "never", "prompt": `say "no\n"`}},
	})
	run := w.workflow("deadbeefcafe1005", "--team-file", cfg)
	if run.res.code != 5 || run.res.elapsed > 20*time.Second {
		t.Fatalf("want exit 5 without waiting for the slow member; got %v", run.res)
	}
	equalFields(t, "avenor.team.end", pick(lastOf(t, run.evs, "avenor.team.end"), "exit_reason", "exit_label", "exit_phase", "members_completed", "members_aborted"),
		map[string]any{"exit_label": "auth service unavailable", "exit_phase": "blocked", "exit_reason": "abort", "members_aborted": 1, "members_completed": 0})
	var session string
	for _, e := range only(run.evs, "avenor.phase.end") {
		if e.str("phase") == "blocked" {
			session = e.str("session_id")
		}
	}
	want := strings.Replace(sentinelBytes("BLOCKED", session, "blocked", 5, "deadbeefcafe1005"), "RUN=", "REASON=auth service unavailable\nRUN=", 1)
	if run.sentinel != want {
		t.Errorf("sentinel %q, want %q", run.sentinel, want)
	}
}

// TestRequiresNudges: a phase that ends without its required file is nudged
// in the same session until the file exists.
func TestRequiresNudges(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	cfg := w.writeConfig("loop.json", map[string]any{"pre": []phase{{
		"name": "report", "prompt": "announce",
		"requires":      map[string]any{"non_empty_files": []string{"report.md"}},
		"on_incomplete": map[string]any{"nudge": "announce\nwrite report.md all done", "max_nudges": 3},
	}}})
	run := w.workflow("deadbeefcafe1006", "--loop-file", cfg, "--dir", w.work)
	if run.res.code != 0 {
		t.Fatalf("want exit 0; got %v", run.res)
	}
	if got := readFile(t, filepath.Join(w.work, "report.md")); got != "all done" {
		t.Errorf("report.md = %q", got)
	}
	sessions := only(run.evs, "session.start")
	turns := only(run.evs, "avenor.turn.start")
	if len(sessions) != 1 || len(turns) != 2 {
		t.Fatalf("%d sessions and %d turns, want one session nudged once", len(sessions), len(turns))
	}
	if got := saidIn(run.evs, sessions[0].str("session_id")); got != "turn 1turn 2" {
		t.Errorf("said %q: the nudge must continue the same session", got)
	}

	// Without the file after the last nudge, the phase fails.
	w2 := newWorld(t)
	cfg2 := w2.writeConfig("loop.json", map[string]any{"pre": []phase{{
		"name": "report", "prompt": `say "no\n"`, "requires": map[string]any{"files": []string{"report.md"}},
		"on_incomplete": map[string]any{"nudge": `say "still no\n"`},
	}}})
	run2 := w2.workflow("deadbeefcafe1007", "--loop-file", cfg2, "--dir", w2.work)
	if run2.res.code != 1 || !strings.Contains(run2.res.stderr, `phase "report": required files missing or empty after 1 nudge(s): report.md`) {
		t.Fatalf("want exit 1 naming the missing file; got %v", run2.res)
	}
	if !strings.Contains(run2.sentinel, "FAILED\n") || !strings.Contains(run2.sentinel, "STOP_REASON=incomplete_output\n") {
		t.Errorf("sentinel %q", run2.sentinel)
	}
}

// TestRosterSelectsPhases: a phase's roster_entry picks its backend and
// model; direct mode runs one entry; the docs/loop.md#rosters rules hold.
func TestRosterSelectsPhases(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.writeFile("work/roster.json", `{"quick": {"backend": "scripted", "model": "tiny", "thinking": "low"}, "talk": {"backend": "echo", "agent": "chat"}}`)
	cfg := w.writeConfig("loop.json", map[string]any{"roster_file": "work/roster.json", "pre": []phase{
		{"name": "default", "prompt": `say "run-level backend\n"`},
		{"name": "picked", "prompt": "hello", "roster_entry": "talk"},
		{"name": "fast", "prompt": `say "fast\n"`, "roster_entry": "quick"},
	}})
	run := w.workflow("deadbeefcafe1008", "--loop-file", cfg)
	if run.res.code != 0 {
		t.Fatalf("want exit 0; got %v", run.res)
	}
	var got []string
	for _, s := range only(run.evs, "session.start") {
		got = append(got, s.str("backend")+"/"+s.str("model"))
	}
	if !slices.Equal(got, []string{"scripted/", "echo/", "scripted/tiny"}) {
		t.Errorf("sessions %q", got)
	}

	// Direct mode: the entry is the run's backend/model/thinking.
	dres := w.run("--roster-file", "roster.json", "--roster-entry", "quick", "--dir", w.work, "--prompt", `say "hi\n"`,
		"--on-event", w.path("direct.ndjson"), "--thinking", "medium")
	if dres.code != 0 {
		t.Fatalf("direct roster run: %v", dres)
	}
	if s := only(readEvents(t, w.path("direct.ndjson")), "session.start")[0]; s.str("backend") != "scripted" || s.str("model") != "tiny" {
		t.Errorf("direct roster run: %v", s)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--roster-entry", "quick", "--prompt", "x"}, "--roster-entry requires --roster-file"},
		{[]string{"--roster-file", "roster.json", "--prompt", "x"}, "--roster-file requires --roster-entry (or a --loop-file or --team-file whose phases set roster_entry)"},
		{[]string{"--roster-file", "roster.json", "--roster-entry", "quick", "--model", "m", "--prompt", "x"}, "--roster-entry and --model are mutually exclusive"},
		{[]string{"--roster-file", "roster.json", "--roster-entry", "quick", "--loop-file", cfg}, "--roster-entry cannot be used with --loop-file or --team-file (set roster_entry on the phases)"},
		{[]string{"--roster-file", "roster.json", "--roster-entry", "nobody", "--prompt", "x"}, `--roster-entry: roster entry "nobody" not found in ` + filepath.Join(w.work, "roster.json")},
	} {
		res := w.run(append([]string{"--dir", w.work, "--sentinel-file", w.path("v.done"), "--run-id", "v"}, c.args...)...)
		if res.code != 1 || res.stderr != "avenor: "+c.msg+"\n" {
			t.Errorf("%v: want exit 1 and %q; got %v", c.args, c.msg, res)
		}
		checkSentinel(t, w.path("v.done"), "FAILED\nSESSION=\nSTOP_REASON=exit_1\nEXIT_CODE=1\nRUN=v\n")
	}
}

// TestResumeFromPrevious: the phase continues the previous phase's session
// (the scripted backend counts a session's turns across processes).
func TestResumeFromPrevious(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	cfg := w.writeConfig("loop.json", map[string]any{"max_iterations": 1, "loop": []phase{
		{"name": "review", "prompt": "announce"},
		{"name": "verify", "prompt": "announce", "resume_from_previous": true},
		{"name": "fresh", "prompt": "announce"},
	}})
	run := w.workflow("deadbeefcafe100a", "--loop-file", cfg)
	if run.res.code != 0 {
		t.Fatalf("want exit 0; got %v", run.res)
	}
	starts := only(run.evs, "session.start")
	if len(starts) != 3 || starts[0].str("session_id") != starts[1].str("session_id") || starts[2].str("session_id") == starts[0].str("session_id") {
		t.Fatalf("sessions %v", starts)
	}
	if got := saidIn(run.evs, starts[0].str("session_id")); got != "turn 1turn 2" {
		t.Errorf("review then verify said %q, want turn 1 then turn 2 of one session", got)
	}
	if got := saidIn(run.evs, starts[2].str("session_id")); got != "turn 1" {
		t.Errorf("fresh said %q", got)
	}
}

// TestGitDeltas: after a phase that commits, the next phase's template sees
// the commit and what it changed.
func TestGitDeltas(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "t"},
		{"config", "commit.gpgsign", "false"}, {"commit", "-q", "--allow-empty", "-m", "start"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = w.work
		cmd.Env = w.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	cfg := w.writeConfig("loop.json", map[string]any{"pre": []phase{
		{"name": "change", "prompt": "write feature.go package feature\nshell git add -A && git commit -qm feature"},
		{"name": "review", "prompt": `write delta.txt {{printf "%q" (printf "commit=%s\nfiles=%s\nstat=%s" .PrevPhaseCommit .ChangedFiles .DiffStat)}}`},
	}})
	run := w.workflow("deadbeefcafe100b", "--loop-file", cfg, "--dir", w.work)
	if run.res.code != 0 {
		t.Fatalf("want exit 0; got %v", run.res)
	}
	cmd := exec.Command("git", "rev-parse", "HEAD")
	cmd.Dir = w.work
	headOut, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got := readFile(t, filepath.Join(w.work, "delta.txt"))
	want := fmt.Sprintf("commit=%s\nfiles=feature.go\nstat= feature.go | 1 +\n 1 file changed, 1 insertion(+)", strings.TrimSpace(string(headOut)))
	if got != want {
		t.Errorf("delta.txt:\n got %q\nwant %q", got, want)
	}
}

// TestVerifyCommand: `avenor verify` on good and bad configs (docs/loop.md#avenor-verify).
func TestVerifyCommand(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.writeFile("cfg/roster.json", `{"quick": {"backend": "scripted", "model": "tiny"}}`)
	w.writeFile("cfg/loop.json", `{"max_iterations": 3, "pre": [{"name": "b", "prompt": "x", "roster_entry": "quick"}], "loop": [{"name": "t", "team_file": "team.json"}]}`)
	w.writeFile("cfg/team.json", `{"team": [{"name": "m", "prompt": "y"}], "post": [{"name": "p", "prompt": "z"}]}`)
	w.writeFile("cfg/bad.json", `{"loop": [{"name": "a", "prompt": "x"}], "max_iterations": 2000}`)
	w.writeFile("cfg/badteam.json", `{"team": [{"name": "a", "prompt": "x", "extra": 1}]}`)

	res := w.run("verify", "--dir", w.path("cfg"), "--loop-file", "loop.json", "--roster-file", "roster.json", "--roster-entry", "quick")
	wantOut := "ok: roster roster.json (1 entries)\nok: roster roster.json: entry \"quick\" found\n" +
		"ok: loop loop.json (2 phases, max_iterations=3)\nok: team team.json (2 phases)\n"
	if res.code != 0 || res.stdout != wantOut || res.stderr != "" {
		t.Errorf("good configs: want exit 0 and\n%s\ngot %v", wantOut, res)
	}

	res = w.run("verify", "--dir", w.path("cfg"), "--loop-file", "bad.json", "--team-file", "badteam.json", "--roster-file", "roster.json", "--roster-entry", "slow")
	wantErr := "error: roster roster.json: entry \"slow\": not found\n" +
		"error: loop bad.json: loop config: max_iterations must be <= 1000, got 2000\n" +
		"error: team badteam.json: team config: unknown field \"extra\"\n"
	if res.code != 1 || res.stderr != wantErr || res.stdout != "ok: roster roster.json (1 entries)\n" {
		t.Errorf("bad configs: want exit 1 and\n%s\ngot %v", wantErr, res)
	}

	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"verify"}, "avenor verify: at least one of --loop-file, --team-file, or --roster-file is required\n"},
		{[]string{"verify", "--roster-entry", "x", "--loop-file", "l.json"}, "avenor verify: --roster-entry requires --roster-file\n"},
	} {
		if res := w.run(c.args...); res.code != 1 || res.stderr != c.msg || res.stdout != "" {
			t.Errorf("%v: want exit 1 and %q; got %v", c.args, c.msg, res)
		}
	}

	// A config avenor run refuses is refused the same way, with the
	// contract's stderr line and a FAILED sentinel.
	run := w.run("--backend", "scripted", "--loop-file", w.path("cfg/bad.json"), "--sentinel-file", w.path("r.done"), "--run-id", "r")
	if run.code != 1 || run.stderr != "avenor: load loop config: loop config: max_iterations must be <= 1000, got 2000\n" {
		t.Errorf("run with a bad config: %v", run)
	}
	checkSentinel(t, w.path("r.done"), "FAILED\nSESSION=\nSTOP_REASON=error\nEXIT_CODE=1\nRUN=r\n")
}

// TestLoopControlSocket: --control-socket with a loop answers for the
// phase in flight, and its cancel ends the whole loop.
func TestLoopControlSocket(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evPath, sentPath, sock := w.path("events.ndjson"), w.path("run.done"), filepath.Join(w.tmp, "ctl", "run.sock")
	cfg := w.writeConfig("loop.json", map[string]any{"loop": []phase{{"name": "wait", "prompt": `say "waiting\n"` + "\nsleep 30s"}}})
	p := w.start(nil, "--backend", "scripted", "--loop-file", cfg, "--control-socket", sock,
		"--on-event", evPath, "--sentinel-file", sentPath, "--run-id", "deadbeefcafe100c")
	waitForLog(t, evPath, `"waiting\n"`, 20*time.Second)
	st := w.run("control", "--socket", sock, "status")
	var status map[string]any
	if st.code != 0 || json.Unmarshal([]byte(st.stdout), &status) != nil {
		t.Fatalf("status: %v", st)
	}
	if status["run_id"] != "deadbeefcafe100c" || status["turn_state"] != "running" || status["session_id"] == "" {
		t.Errorf("status %v", status)
	}
	if c := w.run("control", "--socket", sock, "cancel"); c.code != 0 {
		t.Fatalf("cancel: %v", c)
	}
	if res := p.wait(); res.code != 130 {
		t.Fatalf("want exit 130; got %v", res)
	}
	if got := readFile(t, sentPath); !strings.HasPrefix(got, "KILLED\n") {
		t.Errorf("sentinel %q", got)
	}
}
