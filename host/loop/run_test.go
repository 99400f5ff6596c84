package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/event"
	hostrt "github.com/avenor-go/avenor/host/runner"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// fakePhases is a PhaseFunc without processes: a phase's prompt is a tiny
// script, one command a line —
//
//	say <text>     a message chunk "<text>\n"
//	stop <reason>  end with that stop reason (default end_turn)
//	write <file>   create <file> (non-empty) in the run's dir
//	wait           wait for the context, then end cancelled or timeout
//
// — and a follow-up (FollowUp) is run as one more script in the session.
type fakePhases struct {
	t   *testing.T
	dir string
	w   *event.Writer

	mu    sync.Mutex
	n     int
	specs []Spec
}

func (f *fakePhases) run(ctx context.Context, s Spec) Outcome {
	f.mu.Lock()
	f.n++
	sid := s.Resume
	if sid == "" {
		sid = fmt.Sprintf("ses_%d", f.n)
	}
	f.specs = append(f.specs, s)
	f.mu.Unlock()
	emit := func(ev event.Event) {
		ev["session_id"] = sid
		stamped, err := f.w.Write(ev)
		if err != nil {
			f.t.Error(err)
			return
		}
		s.OnEvent(stamped)
	}
	emit(event.Event{"event": "session.start", "backend": s.Identity.Backend})
	stop := f.script(ctx, s.Prompt, emit)
	for stop == "end_turn" && s.FollowUp != nil {
		text, ok := s.FollowUp()
		if !ok {
			break
		}
		stop = f.script(ctx, text, emit)
	}
	emit(event.Event{"event": "session.end", "stop_reason": string(stop)})
	return Outcome{StopReason: stop, SessionID: sid}
}

func (f *fakePhases) script(ctx context.Context, prompt string, emit func(event.Event)) sdk.StopReason {
	emit(event.Event{"event": "avenor.turn.start"})
	for _, line := range strings.Split(prompt, "\n") {
		cmd, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch cmd {
		case "say":
			emit(msg(arg + "\n"))
		case "stop":
			return sdk.StopReason(arg)
		case "write":
			if err := os.WriteFile(filepath.Join(f.dir, arg), []byte("x"), 0o644); err != nil {
				f.t.Error(err)
			}
		case "wait":
			<-ctx.Done()
			return sdk.StopReason(stopReason(ctx))
		}
	}
	return "end_turn"
}

func (f *fakePhases) names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, s := range f.specs {
		if s.Iteration > 0 {
			out = append(out, fmt.Sprintf("%s#%d", s.Name, s.Iteration))
		} else {
			out = append(out, s.Name)
		}
	}
	return out
}

type fixture struct {
	t        *testing.T
	dir      string
	log      bytes.Buffer
	phases   *fakePhases
	opts     Options
	sentinel string
}

func newRunFixture(t *testing.T) *fixture {
	f := &fixture{t: t, dir: t.TempDir()}
	w := event.NewWriter(&f.log, event.Stamp{RunID: "deadbeefcafe0004"}, event.Options{})
	f.phases = &fakePhases{t: t, dir: f.dir, w: w}
	f.sentinel = filepath.Join(f.dir, "run.done")
	f.opts = Options{RunID: "deadbeefcafe0004", Dir: f.dir, Writer: w, SentinelPath: f.sentinel,
		Identity: Identity{Backend: "scripted"}, Phases: f.phases.run,
		Git: func(context.Context, string, ...string) (string, error) { return "", fmt.Errorf("not a repo") }}
	return f
}

func (f *fixture) loop(js string) *LoopConfig {
	f.t.Helper()
	p := filepath.Join(f.dir, fmt.Sprintf("loop%d.json", time.Now().UnixNano()))
	writeFiles(f.t, "/", map[string]string{p: js})
	c, err := LoadLoop(p, LoadOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) team(js string) *TeamConfig {
	f.t.Helper()
	p := filepath.Join(f.dir, fmt.Sprintf("team%d.json", time.Now().UnixNano()))
	writeFiles(f.t, "/", map[string]string{p: js})
	c, err := LoadTeam(p, LoadOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) events() []event.Event {
	var out []event.Event
	for _, line := range bytes.Split(bytes.TrimSpace(f.log.Bytes()), []byte("\n")) {
		var ev event.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			f.t.Fatalf("bad line %q: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

// lifecycle lists the loop/team events as "type phase kind iteration".
func (f *fixture) lifecycle() []string {
	var out []string
	for _, ev := range f.events() {
		switch ev.Type() {
		case event.TypePhaseStart, event.TypePhaseEnd:
			out = append(out, fmt.Sprintf("%s %v %v %v", strings.TrimPrefix(ev.Type().String(), "avenor."), ev["phase"], ev["kind"], ev["iteration"]))
		case event.TypeLoopStart, event.TypeLoopEnd, event.TypeTeamStart, event.TypeTeamEnd:
			out = append(out, strings.TrimPrefix(ev.Type().String(), "avenor."))
		}
	}
	return out
}

func (f *fixture) last(typ sdk.EventType) event.Event {
	evs := f.events()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type() == typ {
			return evs[i]
		}
	}
	f.t.Fatalf("no %s event", typ)
	return nil
}

func (f *fixture) sentinelText() string {
	data, err := os.ReadFile(f.sentinel)
	if err != nil {
		f.t.Fatal(err)
	}
	return string(data)
}

// fields keeps only the given keys of ev (numbers as JSON gives them).
func fields(ev event.Event, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		if v, ok := ev[k]; ok {
			out[k] = v
		}
	}
	return out
}

func TestLoopExitOnIteration2(t *testing.T) {
	f := newRunFixture(t)
	cfg := f.loop(`{"max_iterations": 5,
		"pre": [{"name": "build", "prompt": "say built"}],
		"loop": [
			{"name": "test", "prompt": "say testing {{.Iteration}}\n{{if eq .Iteration 2}}say [loop: exit | tests green]{{end}}"},
			{"name": "review", "prompt": "say reviewed"},
			{"name": "fix", "prompt": "say fixed"}
		]}`)
	res := RunLoop(context.Background(), cfg, f.opts)
	if res.ExitCode != 0 || res.ExitReason != ReasonMarker {
		t.Fatalf("%+v", res)
	}
	if got := strings.Join(f.phases.names(), " "); got != "build test#1 review#1 fix#1 test#2" {
		t.Fatalf("phases %s", got)
	}
	want := []string{"loop.start", "phase.start build pre 0", "phase.end build pre 0",
		"phase.start test loop 1", "phase.end test loop 1", "phase.start review loop 1", "phase.end review loop 1",
		"phase.start fix loop 1", "phase.end fix loop 1", "phase.start test loop 2", "phase.end test loop 2", "loop.end"}
	if got := f.lifecycle(); !reflect.DeepEqual(got, want) {
		t.Fatalf("lifecycle\n got %q\nwant %q", got, want)
	}
	if got := fields(f.events()[0], "max_iterations", "pre_phase_count", "loop_phase_count", "post_phase_count"); !reflect.DeepEqual(got,
		map[string]any{"max_iterations": 5.0, "pre_phase_count": 1.0, "loop_phase_count": 3.0}) {
		t.Errorf("loop.start %v", got)
	}
	if got := fields(f.last(event.TypePhaseEnd), "phase", "iteration", "kind", "stop_reason", "session_id", "exit_marker", "exit_marker_label", "abort_marker"); !reflect.DeepEqual(got,
		map[string]any{"phase": "test", "iteration": 2.0, "kind": "loop", "stop_reason": "end_turn", "session_id": "ses_5", "exit_marker": true, "exit_marker_label": "tests green"}) {
		t.Errorf("phase.end %v", got)
	}
	if got := fields(f.last(event.TypeLoopEnd), "iterations_completed", "exit_reason", "exit_label", "exit_phase", "exit_phase_kind", "exit_iteration"); !reflect.DeepEqual(got,
		map[string]any{"iterations_completed": 2.0, "exit_reason": "marker", "exit_label": "tests green", "exit_phase": "test", "exit_phase_kind": "loop", "exit_iteration": 2.0}) {
		t.Errorf("loop.end %v", got)
	}
	if got := f.sentinelText(); got != "DONE\nSESSION=ses_5\nSTOP_REASON=end_turn\nRUN=deadbeefcafe0004\n" {
		t.Errorf("sentinel %q", got)
	}
	for i, ev := range f.events() {
		if ev["seq"] != float64(i+1) || ev["run_id"] != "deadbeefcafe0004" {
			t.Fatalf("event %d: one stream, one seq, one run_id: %v", i+1, ev)
		}
	}
}

func TestLoopOutcomes(t *testing.T) {
	for _, c := range []struct {
		name, cfg, initial string
		timeout            time.Duration
		cancelAfter        time.Duration
		exit               int
		reason             string
		sentinel           string
		phases             string
	}{
		{name: "abort", cfg: `{"loop":[{"name":"a","prompt":"say [loop: exit | x]\nsay <|workflow: abort | loop limit exceeded|>"}]}`,
			exit: 5, reason: ReasonAbort, phases: "a#1",
			sentinel: "BLOCKED\nSESSION=ses_1\nSTOP_REASON=blocked\nREASON=loop limit exceeded\nRUN=deadbeefcafe0004\n"},
		{name: "abort without label", cfg: `{"loop":[{"name":"a","prompt":"say [loop: abort]"}]}`,
			exit: 5, reason: ReasonAbort, phases: "a#1",
			sentinel: "BLOCKED\nSESSION=ses_1\nSTOP_REASON=blocked\nRUN=deadbeefcafe0004\n"},
		{name: "max_iterations", cfg: `{"max_iterations":2,"loop":[{"name":"a","prompt":"say [loop: continue]"},{"name":"b","prompt":"say ok"}]}`,
			exit: 0, reason: ReasonMaxIterations, phases: "a#1 b#1 a#2 b#2",
			sentinel: "DONE\nSESSION=ses_4\nSTOP_REASON=end_turn\nRUN=deadbeefcafe0004\n"},
		{name: "pre failure", cfg: `{"pre":[{"name":"p","prompt":"stop refusal"}],"loop":[{"name":"a","prompt":"say never"}]}`,
			exit: 2, reason: ReasonPhaseFailure, phases: "p",
			sentinel: "FAILED\nSESSION=ses_1\nSTOP_REASON=refusal\nEXIT_CODE=2\nRUN=deadbeefcafe0004\n"},
		{name: "pre only", cfg: `{"pre":[{"name":"p","prompt":"say [loop: continue]"}]}`,
			exit: 0, reason: ReasonEndTurn, phases: "p",
			sentinel: "DONE\nSESSION=ses_1\nSTOP_REASON=end_turn\nRUN=deadbeefcafe0004\n"},
		{name: "initial prompt is literal and first", cfg: `{"pre":[{"name":"p","prompt":"say {{.Phase}}"}]}`, initial: "say {{.Phase}} stays",
			exit: 0, reason: ReasonEndTurn, phases: "(initial) p",
			sentinel: "DONE\nSESSION=ses_2\nSTOP_REASON=end_turn\nRUN=deadbeefcafe0004\n"},
		{name: "post after the exit marker", cfg: `{"loop":[{"name":"a","prompt":"say [loop: exit]"}],"post":[{"name":"z","prompt":"say bye"}]}`,
			exit: 0, reason: ReasonMarker, phases: "a#1 z",
			sentinel: "DONE\nSESSION=ses_2\nSTOP_REASON=end_turn\nRUN=deadbeefcafe0004\n"},
		{name: "cancelled", cfg: `{"loop":[{"name":"a","prompt":"say ok"},{"name":"b","prompt":"wait"}]}`, cancelAfter: 50 * time.Millisecond,
			exit: 130, reason: ReasonCancelled, phases: "a#1 b#1",
			sentinel: "KILLED\nSESSION=ses_2\nSTOP_REASON=cancelled\nEXIT_CODE=130\nRUN=deadbeefcafe0004\n"},
		{name: "timeout", cfg: `{"loop":[{"name":"a","prompt":"wait"}]}`, timeout: 50 * time.Millisecond,
			exit: 124, reason: ReasonTimeout, phases: "a#1",
			sentinel: "TIMEOUT\nSESSION=ses_1\nSTOP_REASON=timeout\nRUN=deadbeefcafe0004\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newRunFixture(t)
			cfg := f.loop(c.cfg)
			f.opts.Initial, f.opts.Timeout = c.initial, c.timeout
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			if c.cancelAfter > 0 {
				time.AfterFunc(c.cancelAfter, func() { cancel(hostrt.ErrInterrupted) })
			}
			res := RunLoop(ctx, cfg, f.opts)
			if res.ExitCode != c.exit || res.ExitReason != c.reason {
				t.Fatalf("%+v, want exit %d reason %s", res, c.exit, c.reason)
			}
			if got := strings.Join(f.phases.names(), " "); got != c.phases {
				t.Errorf("phases %q, want %q", got, c.phases)
			}
			if got := f.sentinelText(); got != c.sentinel {
				t.Errorf("sentinel %q, want %q", got, c.sentinel)
			}
			if got := f.last(event.TypeLoopEnd)["exit_reason"]; got != c.reason {
				t.Errorf("loop.end exit_reason %v", got)
			}
		})
	}
}

func TestResumeFromPrevious(t *testing.T) {
	f := newRunFixture(t)
	writeFiles(t, f.dir, map[string]string{"roster.json": `{"other": {"backend": "echo", "model": "m"}}`})
	cfg := f.loop(`{"roster_file": "roster.json", "pre": [{"name": "p1", "prompt": "say a"}, {"name": "p2", "resume_from_previous": true, "prompt": "say b"}],
		"loop": [{"name": "l1", "resume_from_previous": true, "prompt": "say c"}, {"name": "l2", "resume_from_previous": true, "prompt": "say d"},
		         {"name": "l3", "resume_from_previous": true, "prompt": "say e", "roster_entry": "other"}]}`)
	res := RunLoop(context.Background(), cfg, f.opts)
	if res.ExitCode != 1 || res.ExitReason != ReasonPhaseFailure {
		t.Fatalf("%+v", res)
	}
	var resumes []string
	for _, s := range f.phases.specs {
		resumes = append(resumes, s.Name+"="+s.Resume)
	}
	// Pre phases and the first loop phase never resume; l2 resumes l1; l3
	// would change backend, so it fails before any session starts.
	if got := strings.Join(resumes, " "); got != "p1= p2= l1= l2=ses_3" {
		t.Fatalf("resumes %s", got)
	}
	errEv := f.last(event.TypeError)
	if msg, _ := errEv["message"].(string); errEv["source"] != "loop" || !strings.Contains(msg, `phase "l3": resume_from_previous needs the previous phase's backend, agent and model`) {
		t.Fatalf("%v", errEv)
	}
}

func TestRequiresAndNudges(t *testing.T) {
	for _, c := range []struct {
		name, phase string
		exit        int
		nudges      int
	}{
		{"met at once", `{"name":"w","prompt":"write out.md","requires":{"non_empty_files":["out.md"]}}`, 0, 0},
		{"nudged until the file exists", `{"name":"w","prompt":"say later","requires":{"files":["out.md"]},
			"on_incomplete":{"nudge":"say nudged\nwrite out.md","max_nudges":3}}`, 0, 1},
		{"default nudge, default budget of one, still missing", `{"name":"w","prompt":"say later","requires":{"files":["out.md"]}}`, 1, 1},
		{"budget spent", `{"name":"w","prompt":"say later","requires":{"files":["out.md"]},"on_incomplete":{"nudge":"say no","max_nudges":2}}`, 1, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newRunFixture(t)
			cfg := f.loop(`{"pre":[` + c.phase + `]}`)
			res := RunLoop(context.Background(), cfg, f.opts)
			if res.ExitCode != c.exit {
				t.Fatalf("%+v", res)
			}
			turns := 0
			for _, ev := range f.events() {
				if ev.Type() == "avenor.turn.start" {
					turns++
				}
			}
			if turns != 1+c.nudges {
				t.Errorf("%d turns, want %d", turns, 1+c.nudges)
			}
			if c.exit != 0 {
				if got := f.last(event.TypePhaseEnd)["stop_reason"]; got != StopIncompleteOutput {
					t.Errorf("phase.end stop_reason %v", got)
				}
				if !strings.Contains(f.sentinelText(), "STOP_REASON=incomplete_output\nEXIT_CODE=1\n") {
					t.Errorf("sentinel %q", f.sentinelText())
				}
			}
		})
	}
}

func TestNestedRuns(t *testing.T) {
	f := newRunFixture(t)
	writeFiles(t, f.dir, map[string]string{
		"inner.json": `{"max_iterations": 3, "loop": [{"name": "i", "prompt": "{{if eq .Iteration 2}}say <|workflow: abort | inner stuck|>{{end}}"}]}`,
		"team.json":  `{"team": [{"name": "m1", "prompt": "say one"}, {"name": "m2", "prompt": "say two"}]}`,
	})
	cfg := f.loop(`{"pre": [{"name": "t", "team_file": "team.json"}], "loop": [{"name": "outer", "loop_file": "inner.json"}, {"name": "never", "prompt": "say no"}]}`)
	res := RunLoop(context.Background(), cfg, f.opts)
	if res.ExitCode != 5 || res.Reason != "inner stuck" || res.ExitReason != ReasonAbort {
		t.Fatalf("%+v", res)
	}
	lc := strings.Join(f.lifecycle(), "\n")
	for _, want := range []string{"phase.start t pre 0\nteam.start", "team.end\nphase.end t pre 0",
		"phase.start outer loop 1\nloop.start\nphase.start i loop 1", "phase.end i loop 2\nloop.end\nphase.end outer loop 1\nloop.end"} {
		if !strings.Contains(lc, want) {
			t.Errorf("lifecycle lacks %q:\n%s", want, lc)
		}
	}
	if got := fields(f.last(event.TypeLoopEnd), "exit_reason", "exit_label", "exit_phase"); !reflect.DeepEqual(got,
		map[string]any{"exit_reason": "abort", "exit_label": "inner stuck", "exit_phase": "outer"}) {
		t.Errorf("outer loop.end %v", got)
	}
}

func TestTeam(t *testing.T) {
	for _, c := range []struct {
		name, cfg string
		exit      int
		reason    string
		ran       []string
		end       map[string]any
	}{
		{name: "three members, one skipped",
			cfg: `{"pre":[{"name":"triage","prompt":"say <|team: skip | DB|>\nsay <|team: skip | api|>"}],
				"team":[{"name":"api","prompt":"say api"},{"name":"db","prompt":"say db","conditional":true},{"name":"ui","prompt":"say ui","conditional":true}],
				"post":[{"name":"review","prompt":"say review"}]}`,
			exit: 0, reason: ReasonEndTurn, ran: []string{"api", "review", "triage", "ui"},
			end: map[string]any{"exit_reason": "end_turn", "members_completed": 2.0, "members_aborted": 0.0, "members_skipped": []any{"db"}}},
		{name: "abort cancels the others and skips post",
			cfg: `{"team":[{"name":"a","prompt":"wait"},{"name":"b","prompt":"say <|workflow: abort | no db|>"},{"name":"c","prompt":"wait"}],
				"post":[{"name":"review","prompt":"say review"}]}`,
			exit: 5, reason: ReasonAbort, ran: []string{"a", "b", "c"},
			end: map[string]any{"exit_reason": "abort", "exit_label": "no db", "exit_phase": "b", "members_completed": 0.0, "members_aborted": 1.0}},
		{name: "member failure",
			cfg:  `{"team":[{"name":"a","prompt":"say fine"},{"name":"b","prompt":"stop max_tokens"}],"post":[{"name":"review","prompt":"say review"}]}`,
			exit: 3, reason: ReasonPhaseFailure, ran: []string{"a", "b"},
			end: map[string]any{"exit_reason": "phase_failure", "exit_phase": "b", "members_completed": 1.0, "members_aborted": 0.0}},
		{name: "pre failure",
			cfg:  `{"pre":[{"name":"p","prompt":"stop error"}],"team":[{"name":"a","prompt":"say fine"}]}`,
			exit: 1, reason: ReasonPreFailure, ran: []string{"p"},
			end: map[string]any{"exit_reason": "pre_failure", "exit_phase": "p", "members_completed": 0.0, "members_aborted": 0.0}},
		{name: "post failure",
			cfg:  `{"team":[{"name":"a","prompt":"say fine"}],"post":[{"name":"z","prompt":"stop refusal"}]}`,
			exit: 2, reason: ReasonPostFailure, ran: []string{"a", "z"},
			end: map[string]any{"exit_reason": "post_failure", "exit_phase": "z", "members_completed": 1.0, "members_aborted": 0.0}},
		{name: "every member skipped",
			cfg:  `{"pre":[{"name":"p","prompt":"say <|team: skip | a|>"}],"team":[{"name":"a","prompt":"say a","conditional":true}],"post":[{"name":"z","prompt":"say z"}]}`,
			exit: 0, reason: ReasonEndTurn, ran: []string{"p", "z"},
			end: map[string]any{"exit_reason": "end_turn", "members_completed": 0.0, "members_aborted": 0.0, "members_skipped": []any{"a"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newRunFixture(t)
			cfg := f.team(c.cfg)
			res := RunTeam(context.Background(), cfg, f.opts)
			if res.ExitCode != c.exit || res.ExitReason != c.reason {
				t.Fatalf("%+v", res)
			}
			ran := f.phases.names()
			sortStrings(ran)
			if !reflect.DeepEqual(ran, c.ran) {
				t.Errorf("ran %v, want %v", ran, c.ran)
			}
			got := fields(f.last(event.TypeTeamEnd), "exit_reason", "exit_label", "exit_phase", "members_completed", "members_aborted", "members_skipped")
			if !reflect.DeepEqual(got, c.end) {
				t.Errorf("team.end %v, want %v", got, c.end)
			}
			for _, ev := range f.events() {
				if ev.Type() == event.TypePhaseStart && ev["iteration"] != 0.0 {
					t.Errorf("team phases have iteration 0: %v", ev)
				}
			}
		})
	}
}

// The last pre phase of a team with conditional members is told how to
// skip them; members share the pre phases' commit.
func TestTeamPromptsAndCommits(t *testing.T) {
	f := newRunFixture(t)
	heads := map[string]string{}
	var mu sync.Mutex
	n := 0
	f.opts.Git = func(_ context.Context, _ string, args ...string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if args[0] == "rev-parse" {
			n++
			return fmt.Sprintf("c%d\n", n), nil
		}
		return strings.Join(args, " "), nil
	}
	cfg := f.team(`{"pre":[{"name":"p1","prompt":"say 1"},{"name":"p2","prompt":"say {{.PrevPhaseCommit}}"}],
		"team":[{"name":"a","prompt":"say {{.PrevPhaseCommit}}","conditional":true},{"name":"b","prompt":"say {{.PrevPhaseCommit}}"}],
		"post":[{"name":"z","prompt":"say {{.PrevPhaseCommit}}"}]}`)
	if res := RunTeam(context.Background(), cfg, f.opts); res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	for _, s := range f.phases.specs {
		heads[s.Name] = s.Prompt
	}
	// rev-parse answers c1, c2… in call order: before and after each phase.
	if heads["p1"] != "say 1" || !strings.HasPrefix(heads["p2"], "say c2\n\n# Note from avenor: ") ||
		!strings.Contains(heads["p2"], "these members are optional: a. ") || strings.Count(heads["p2"], "\n") != 2 {
		t.Errorf("pre prompts %q / %q", heads["p1"], heads["p2"])
	}
	if heads["a"] != "say c4" || heads["b"] != "say c4" {
		t.Errorf("members share the pre phases' commit: %q %q", heads["a"], heads["b"])
	}
	if heads["z"] != "say c9" {
		t.Errorf("post starts from HEAD after the members: %q", heads["z"])
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
