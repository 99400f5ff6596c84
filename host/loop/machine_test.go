package loop

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// script is what each phase ends with, keyed by "kind/index/iteration";
// phases not named end cleanly without a marker.
type script map[string]PhaseEnd

func key(s Step) string { return fmt.Sprintf("%s/%d/%d", s.Kind, s.Index, s.Iteration) }

var (
	clean     = PhaseEnd{StopReason: "end_turn"}
	exitMark  = PhaseEnd{StopReason: "end_turn", Marker: Marker{Exit, "green"}}
	abortMark = PhaseEnd{StopReason: "end_turn", Marker: Marker{Abort, "stuck"}}
	contMark  = PhaseEnd{StopReason: "end_turn", Marker: Marker{Continue, ""}}
)

func TestMachine(t *testing.T) {
	for _, c := range []struct {
		name            string
		pre, loop, post int
		max             int
		phases          script
		stopAt          string // stop the run (cancelled/timeout) instead of running this step
		stopReason      string
		steps           string
		want            End
	}{
		{name: "exit marker on iteration 2", pre: 1, loop: 3, max: 5,
			phases: script{"loop/0/2": exitMark},
			steps:  "pre/0/0 loop/0/1 loop/1/1 loop/2/1 loop/0/2",
			want:   End{Reason: ReasonMarker, Label: "green", Decider: Step{KindLoop, 0, 2}, Iterations: 2, ExitCode: 0, StopReason: "end_turn"}},
		{name: "exit marker mid iteration stops at once", pre: 0, loop: 3, max: 5,
			phases: script{"loop/1/1": exitMark},
			steps:  "loop/0/1 loop/1/1",
			want:   End{Reason: ReasonMarker, Label: "green", Decider: Step{KindLoop, 1, 1}, Iterations: 1, StopReason: "end_turn"}},
		{name: "abort", pre: 1, loop: 2, max: 5,
			phases: script{"loop/1/3": abortMark},
			steps:  "pre/0/0 loop/0/1 loop/1/1 loop/0/2 loop/1/2 loop/0/3 loop/1/3",
			want:   End{Reason: ReasonAbort, Label: "stuck", Decider: Step{KindLoop, 1, 3}, Iterations: 3, ExitCode: 5, StopReason: "blocked"}},
		{name: "abort beats exit in the same phase", loop: 1, max: 3,
			phases: script{"loop/0/1": {StopReason: "end_turn", Marker: Marker{Abort, "a"}}},
			steps:  "loop/0/1",
			want:   End{Reason: ReasonAbort, Label: "a", Decider: Step{KindLoop, 0, 1}, Iterations: 1, ExitCode: 5, StopReason: "blocked"}},
		{name: "max_iterations", pre: 1, loop: 2, post: 1, max: 2,
			phases: script{"loop/0/1": contMark},
			steps:  "pre/0/0 loop/0/1 loop/1/1 loop/0/2 loop/1/2 post/0/0",
			want:   End{Reason: ReasonMaxIterations, Iterations: 2, StopReason: "end_turn"}},
		{name: "pre failure", pre: 2, loop: 1, max: 3,
			phases: script{"pre/1/0": {StopReason: "refusal"}},
			steps:  "pre/0/0 pre/1/0",
			want:   End{Reason: ReasonPhaseFailure, Decider: Step{KindPre, 1, 0}, ExitCode: 2, StopReason: "refusal"}},
		{name: "loop failure mid iteration 2", loop: 2, max: 3,
			phases: script{"loop/1/2": {StopReason: "error"}},
			steps:  "loop/0/1 loop/1/1 loop/0/2 loop/1/2",
			want:   End{Reason: ReasonPhaseFailure, Decider: Step{KindLoop, 1, 2}, Iterations: 1, ExitCode: 1, StopReason: "error"}},
		{name: "a marker in a failed phase is not acted on", loop: 1, max: 3,
			phases: script{"loop/0/1": {StopReason: "max_tokens", Marker: Marker{Exit, "x"}}},
			steps:  "loop/0/1",
			want:   End{Reason: ReasonPhaseFailure, Decider: Step{KindLoop, 0, 1}, ExitCode: 3, StopReason: "max_tokens"}},
		{name: "progress timeout fails the phase", loop: 1, max: 3,
			phases: script{"loop/0/1": {StopReason: "progress_timeout"}},
			steps:  "loop/0/1",
			want:   End{Reason: ReasonPhaseFailure, Decider: Step{KindLoop, 0, 1}, ExitCode: 124, StopReason: "progress_timeout"}},
		{name: "pre phases only", pre: 2, max: 10,
			steps: "pre/0/0 pre/1/0",
			want:  End{Reason: ReasonEndTurn, StopReason: "end_turn"}},
		{name: "exit marker in pre skips the loop, post still runs", pre: 2, loop: 2, post: 1, max: 4,
			phases: script{"pre/0/0": exitMark},
			steps:  "pre/0/0 post/0/0",
			want:   End{Reason: ReasonMarker, Label: "green", Decider: Step{KindPre, 0, 0}, StopReason: "end_turn"}},
		{name: "post runs after the exit marker", loop: 1, post: 2, max: 4,
			phases: script{"loop/0/2": exitMark},
			steps:  "loop/0/1 loop/0/2 post/0/0 post/1/0",
			want:   End{Reason: ReasonMarker, Label: "green", Decider: Step{KindLoop, 0, 2}, Iterations: 2, StopReason: "end_turn"}},
		{name: "exit marker in post changes nothing", loop: 1, post: 2, max: 1,
			phases: script{"post/0/0": exitMark},
			steps:  "loop/0/1 post/0/0 post/1/0",
			want:   End{Reason: ReasonMaxIterations, Iterations: 1, StopReason: "end_turn"}},
		{name: "post failure", loop: 1, post: 1, max: 1,
			phases: script{"post/0/0": {StopReason: "refusal"}},
			steps:  "loop/0/1 post/0/0",
			want:   End{Reason: ReasonPhaseFailure, Decider: Step{KindPost, 0, 0}, Iterations: 1, ExitCode: 2, StopReason: "refusal"}},
		{name: "abort in post", loop: 1, post: 1, max: 1,
			phases: script{"post/0/0": abortMark},
			steps:  "loop/0/1 post/0/0",
			want:   End{Reason: ReasonAbort, Label: "stuck", Decider: Step{KindPost, 0, 0}, Iterations: 1, ExitCode: 5, StopReason: "blocked"}},
		{name: "cancelled", pre: 1, loop: 2, max: 5,
			stopAt: "loop/1/2", stopReason: ReasonCancelled,
			steps: "pre/0/0 loop/0/1 loop/1/1 loop/0/2",
			want:  End{Reason: ReasonCancelled, Iterations: 1, ExitCode: 130, StopReason: "cancelled"}},
		{name: "timeout", loop: 1, max: 5,
			stopAt: "loop/0/3", stopReason: ReasonTimeout,
			steps: "loop/0/1 loop/0/2",
			want:  End{Reason: ReasonTimeout, Iterations: 2, ExitCode: 124, StopReason: "timeout"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := NewMachine(c.pre, c.loop, c.post, c.max)
			var steps []string
			for n := 0; ; n++ {
				if n > 1000 {
					t.Fatal("the machine never ends")
				}
				s, ok := m.Next()
				if !ok {
					break
				}
				if key(s) == c.stopAt {
					m.Stop(c.stopReason)
					continue
				}
				steps = append(steps, key(s))
				end, ok := c.phases[key(s)]
				if !ok {
					end = clean
				}
				m.Done(end)
			}
			if got := strings.Join(steps, " "); got != c.steps {
				t.Errorf("steps\n got %s\nwant %s", got, c.steps)
			}
			if got := m.End(); !reflect.DeepEqual(got, c.want) {
				t.Errorf("end\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestDecideTeam(t *testing.T) {
	for _, c := range []struct {
		name           string
		ends           []MemberEnd
		want           End
		completed, abo int
	}{
		{"all clean", []MemberEnd{{Index: 0, StopReason: "end_turn"}, {Index: 2, StopReason: "end_turn"}},
			End{Reason: ReasonEndTurn, StopReason: "end_turn"}, 2, 0},
		{"no members", nil, End{Reason: ReasonEndTurn, StopReason: "end_turn"}, 0, 0},
		{"first abort wins", []MemberEnd{
			{Index: 1, StopReason: "end_turn"},
			{Index: 2, StopReason: "end_turn", Marker: Marker{Abort, "first"}},
			{Index: 0, StopReason: "end_turn", Marker: Marker{Abort, "second"}},
			{Index: 3, StopReason: "cancelled", StoppedByAbort: true},
		}, End{Reason: ReasonAbort, Label: "first", Decider: Step{Kind: KindTeam, Index: 2}, ExitCode: 5, StopReason: "blocked"}, 1, 2},
		{"failure", []MemberEnd{{Index: 0, StopReason: "end_turn"}, {Index: 1, StopReason: "refusal"}, {Index: 2, StopReason: "error"}},
			End{Reason: ReasonPhaseFailure, Decider: Step{Kind: KindTeam, Index: 1}, ExitCode: 2, StopReason: "refusal"}, 1, 0},
		{"abort beats a failure", []MemberEnd{{Index: 0, StopReason: "error"}, {Index: 1, StopReason: "end_turn", Marker: Marker{Abort, ""}}},
			End{Reason: ReasonAbort, Decider: Step{Kind: KindTeam, Index: 1}, ExitCode: 5, StopReason: "blocked"}, 0, 1},
		{"an exit marker is just a clean end", []MemberEnd{{Index: 0, StopReason: "end_turn", Marker: Marker{Exit, "x"}}},
			End{Reason: ReasonEndTurn, StopReason: "end_turn"}, 1, 0},
		{"abort in a failed member is not acted on", []MemberEnd{{Index: 0, StopReason: "error", Marker: Marker{Abort, "x"}}},
			End{Reason: ReasonPhaseFailure, Decider: Step{Kind: KindTeam}, ExitCode: 1, StopReason: "error"}, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := DecideTeam(c.ends)
			if !reflect.DeepEqual(got.End, c.want) || got.Completed != c.completed || got.Aborted != c.abo {
				t.Errorf("got %+v, want %+v completed %d aborted %d", got, c.want, c.completed, c.abo)
			}
		})
	}
}

func TestConditionalSkips(t *testing.T) {
	team := []Phase{{Name: "auth-review", Conditional: true}, {Name: "api-review", Conditional: true}, {Name: "summary"}}
	for _, c := range []struct {
		skips   []string
		run     []int
		skipped []string
	}{
		{nil, []int{0, 1, 2}, nil},
		{[]string{"AUTH-review"}, []int{1, 2}, []string{"auth-review"}},
		{[]string{"summary", "nobody"}, []int{0, 1, 2}, nil}, // not conditional / unknown: ignored
		{[]string{"api-review", "auth-review"}, []int{2}, []string{"auth-review", "api-review"}},
	} {
		run, skipped := ConditionalSkips(team, c.skips)
		if !reflect.DeepEqual(run, c.run) || !reflect.DeepEqual(skipped, c.skipped) {
			t.Errorf("skips %v: run %v skipped %v, want %v %v", c.skips, run, skipped, c.run, c.skipped)
		}
	}
}
