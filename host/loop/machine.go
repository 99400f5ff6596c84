package loop

import (
	"strings"

	"github.com/avenor-go/avenor/host/sentinel"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Exit reasons of avenor.loop.end (docs/loop.md#lifecycle-events) and avenor.team.end (docs/loop.md#teams).
const (
	ReasonMarker        = "marker"
	ReasonAbort         = "abort"
	ReasonMaxIterations = "max_iterations"
	ReasonPhaseFailure  = "phase_failure"
	ReasonCancelled     = "cancelled"
	ReasonTimeout       = "timeout"
	ReasonEndTurn       = "end_turn"
	ReasonPreFailure    = "pre_failure"
	ReasonPostFailure   = "post_failure"
)

// Step is one phase to run: its section, its index there and, for loop
// phases, its 1-based iteration (0 otherwise).
type Step struct {
	Kind      string
	Index     int
	Iteration int
}

// PhaseEnd is how a phase ended, as far as the loop is concerned: its stop
// reason and, when it ended naturally, its most severe marker.
type PhaseEnd struct {
	StopReason sdk.StopReason
	Marker     Marker
}

// End is how a loop or team run ended.
type End struct {
	// Reason is the exit_reason of the end event.
	Reason string
	// Label is the deciding marker's label (marker and abort only).
	Label string
	// Decider is the phase that decided the end (marker, abort, a failure);
	// Decider.Kind is "" when none did (max_iterations, end_turn, a stop).
	Decider Step
	// Iterations is iterations_completed: iterations run to their end or
	// ended by a marker.
	Iterations int
	// ExitCode and StopReason are the run's, for the sentinel.
	ExitCode   int
	StopReason sdk.StopReason
}

// Machine is the phase state machine of a loop (docs/loop.md#lifecycle-events): pre phases once,
// loop phases top to bottom and again until an exit or abort marker, a
// failure or max_iterations, then post phases. It is pure: the runner asks
// Next, runs the phase, and tells Done (or Stop, when the run's context
// ended).
//
// A pre phase's exit marker ends the loop before it starts (post phases
// still run); an abort marker in any phase ends the run BLOCKED; any phase
// ending other than end_turn fails the run with that phase's exit code; an
// exit marker in a post phase has nothing left to end.
type Machine struct {
	pre, loop, post, max int

	cur       Step
	started   bool
	done      bool
	completed int // iterations completed
	outcome   End // how the main part ended, kept while post phases run
	end       End
}

// NewMachine plans a loop of pre, loop and post phases and max iterations.
func NewMachine(pre, loop, post, max int) *Machine {
	return &Machine{pre: pre, loop: loop, post: post, max: max}
}

// Next is the phase to run now; false once the run is over.
func (m *Machine) Next() (Step, bool) {
	if m.done {
		return Step{}, false
	}
	if !m.started {
		m.started = true
		m.cur = Step{Kind: KindPre, Index: 0}
		m.settle()
	}
	if m.done {
		return Step{}, false
	}
	return m.cur, true
}

// settle moves cur past empty sections, ending the run when nothing is left.
func (m *Machine) settle() {
	for !m.done {
		switch m.cur.Kind {
		case KindPre:
			if m.cur.Index < m.pre {
				return
			}
			if m.loop > 0 {
				m.cur = Step{Kind: KindLoop, Index: 0, Iteration: 1}
				continue
			}
			m.outcome = End{Reason: ReasonEndTurn}
			m.cur = Step{Kind: KindPost}
		case KindLoop:
			if m.cur.Index < m.loop {
				return
			}
			m.completed = m.cur.Iteration
			if m.cur.Iteration < m.max {
				m.cur = Step{Kind: KindLoop, Index: 0, Iteration: m.cur.Iteration + 1}
				continue
			}
			m.outcome = End{Reason: ReasonMaxIterations}
			m.cur = Step{Kind: KindPost}
		case KindPost:
			if m.cur.Index < m.post {
				return
			}
			m.finish(m.outcome)
		}
	}
}

// Done records how the current phase ended.
func (m *Machine) Done(r PhaseEnd) {
	if m.done || !m.started {
		return
	}
	step := m.cur
	if code := sentinel.ExitCode(r.StopReason); code != sentinel.ExitOK {
		m.finish(End{Reason: ReasonPhaseFailure, Decider: step, ExitCode: code, StopReason: r.StopReason})
		return
	}
	switch {
	case r.Marker.Directive == Abort:
		if step.Kind == KindLoop {
			m.completed = step.Iteration
		}
		m.finish(End{Reason: ReasonAbort, Label: r.Marker.Label, Decider: step,
			ExitCode: sentinel.ExitBlocked, StopReason: sentinel.StopBlocked})
		return
	case r.Marker.Directive == Exit && step.Kind != KindPost:
		if step.Kind == KindLoop {
			m.completed = step.Iteration
		}
		m.outcome = End{Reason: ReasonMarker, Label: r.Marker.Label, Decider: step}
		m.cur = Step{Kind: KindPost}
		m.settle()
		return
	}
	m.cur.Index++
	m.settle()
}

// Stop ends the run because its context ended: reason is ReasonCancelled
// or ReasonTimeout.
func (m *Machine) Stop(reason string) {
	if m.done {
		return
	}
	e := End{Reason: reason, ExitCode: sentinel.ExitCancelled, StopReason: sentinel.StopCancelled}
	if reason == ReasonTimeout {
		e.ExitCode, e.StopReason = sentinel.ExitTimeout, sentinel.StopTimeout
	}
	m.finish(e)
}

func (m *Machine) finish(e End) {
	if e.StopReason == "" {
		e.ExitCode, e.StopReason = sentinel.ExitOK, sentinel.StopEndTurn
	}
	e.Iterations = m.completed
	m.end, m.done = e, true
}

// End is how the run ended; valid once Next reports false.
func (m *Machine) End() End { return m.end }

// MemberEnd is how one team member ended.
type MemberEnd struct {
	Index int
	// StopReason of the member's phase; cancelled when the team's abort
	// stopped it.
	StopReason sdk.StopReason
	Marker     Marker
	// StoppedByAbort: another member's abort cancelled this one.
	StoppedByAbort bool
}

// TeamOutcome is how a team's members ended together.
type TeamOutcome struct {
	End End
	// Completed and Aborted are members_completed and members_aborted.
	Completed, Aborted int
}

// DecideTeam applies the team rules (docs/loop.md#teams) to its members' ends, listed in
// the order they ended: the first member's abort marker wins (BLOCKED,
// post skipped); else the first member that ended other than end_turn
// fails the team (phase_failure, its exit code); else every member
// succeeded and post phases run.
func DecideTeam(ends []MemberEnd) TeamOutcome {
	var out TeamOutcome
	var abort, fail *MemberEnd
	for i := range ends {
		e := &ends[i]
		clean := sentinel.ExitCode(e.StopReason) == sentinel.ExitOK
		switch {
		case clean && e.Marker.Directive == Abort:
			out.Aborted++
			if abort == nil {
				abort = e
			}
		case clean:
			out.Completed++
		case !e.StoppedByAbort && fail == nil:
			fail = e
		}
	}
	switch {
	case abort != nil:
		out.End = End{Reason: ReasonAbort, Label: abort.Marker.Label, Decider: Step{Kind: KindTeam, Index: abort.Index},
			ExitCode: sentinel.ExitBlocked, StopReason: sentinel.StopBlocked}
	case fail != nil:
		out.End = End{Reason: ReasonPhaseFailure, Decider: Step{Kind: KindTeam, Index: fail.Index},
			ExitCode: sentinel.ExitCode(fail.StopReason), StopReason: fail.StopReason}
	default:
		out.End = End{Reason: ReasonEndTurn, ExitCode: sentinel.ExitOK, StopReason: sentinel.StopEndTurn}
	}
	return out
}

// ConditionalSkips is which team members run: every member, but the
// conditional ones a skip marker named (case-insensitively). Unknown names
// and non-conditional members are ignored.
func ConditionalSkips(team []Phase, skips []string) (run []int, skipped []string) {
	named := map[string]bool{}
	for _, s := range skips {
		named[strings.ToLower(s)] = true
	}
	for i := range team {
		if team[i].Conditional && named[strings.ToLower(team[i].Name)] {
			skipped = append(skipped, team[i].Name)
			continue
		}
		run = append(run, i)
	}
	return run, skipped
}
