package loop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/avenor-go/avenor/host/event"
	hostrt "github.com/avenor-go/avenor/host/runner"
	"github.com/avenor-go/avenor/host/sentinel"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Spec is one phase session for a PhaseFunc to run.
type Spec struct {
	// Name, Kind and Iteration say which phase this is.
	Name, Kind string
	Iteration  int
	// Prompt is the rendered prompt of the first turn.
	Prompt string
	// Identity is who runs it (roster entry, member overrides, the run's).
	Identity Identity
	// Resume is the session to continue (resume_from_previous); "" for a
	// fresh one.
	Resume string
	// OnEvent must see every event of the phase, in order (markers).
	OnEvent func(event.Event)
	// FollowUp, when not nil, is asked after every clean turn for a
	// follow-up in the same session (on_incomplete nudges).
	FollowUp func() (string, bool)
}

// Outcome is how a phase session ended.
type Outcome struct {
	StopReason sdk.StopReason
	SessionID  string
}

// PhaseFunc runs one phase session to its end, writing its events into the
// loop's stream. It must return when ctx is done.
type PhaseFunc func(ctx context.Context, s Spec) Outcome

// Options configure a loop or team run. Writer and Phases are required.
type Options struct {
	// RunID is written in the sentinel's RUN line.
	RunID string
	// Dir is the agent's absolute working directory: WorkDir, the base of
	// requires paths, and the repository of the git deltas.
	Dir string
	// Writer is the run's one event stream.
	Writer *event.Writer
	// SentinelPath gets the run's one sentinel; "" for none (nested runs).
	SentinelPath string
	// Timeout is the whole run's wall clock (0: none): "timeout", exit 124.
	Timeout time.Duration
	// Initial is the prompt of the "(initial)" pre phase that --prompt or
	// --prompt-file insert at index 0; "" for none. It is the user's own
	// text: not a template.
	Initial string
	// Identity is the run-level backend, agent, model and thinking.
	Identity Identity
	// Phases runs each phase session.
	Phases PhaseFunc
	// Git runs git for the template deltas; default GitCLI.
	Git GitFunc
	// Stderr gets one line per loop-level failure; default discard.
	Stderr io.Writer
}

// Result is how a loop or team run ended.
type Result struct {
	ExitCode   int
	StopReason sdk.StopReason
	// SessionID is the last phase session's (the sentinel's SESSION).
	SessionID string
	// Reason is the abort marker's label (the sentinel's REASON).
	Reason string
	// ExitReason is the end event's exit_reason.
	ExitReason string
	// SentinelErr is why the run's one sentinel could not be written,
	// already told on stderr; nil when it was written or none was asked for.
	SentinelErr error
}

// RunLoop runs a loop config to its end and writes the run's one sentinel
// (docs/loop.md#outcomes). ctx cancelled with hostrt.ErrInterrupted as its cause ends it as
// cancelled (exit 130).
func RunLoop(ctx context.Context, cfg *LoopConfig, o Options) Result {
	return runTop(ctx, o, func(ctx context.Context, r *runner) Result { return r.loop(ctx, cfg, o.Initial) })
}

// RunTeam runs a team config to its end and writes the run's one sentinel.
func RunTeam(ctx context.Context, cfg *TeamConfig, o Options) Result {
	return runTop(ctx, o, func(ctx context.Context, r *runner) Result { return r.team(ctx, cfg, o.Initial) })
}

// runTop runs a top-level loop or team under the run's clock, then writes
// its one sentinel.
func runTop(ctx context.Context, o Options, body func(context.Context, *runner) Result) Result {
	r := newRunner(o)
	ctx, stop := r.clock(ctx)
	defer stop()
	res := r.incompleteLog(body(ctx, r))
	res.SentinelErr = r.writeSentinel(res)
	return res
}

// runner drives one run's phases, nested runs included.
type runner struct {
	o        Options
	stderrMu sync.Mutex
}

func newRunner(o Options) *runner {
	if o.Git == nil {
		o.Git = GitCLI
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	return &runner{o: o}
}

func (r *runner) clock(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.o.Timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, r.o.Timeout, hostrt.ErrTimeout)
}

// stopReason is the exit_reason of a run whose context ended.
func stopReason(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), hostrt.ErrTimeout) {
		return ReasonTimeout
	}
	return ReasonCancelled
}

func (r *runner) emit(ev event.Event) {
	// A failed log is told once, by incompleteLog at the end; its phases
	// have already been ended by it (host/runner.ErrEventLog).
	if _, err := r.o.Writer.Write(ev); err != nil && !errors.Is(err, event.ErrClosed) && r.o.Writer.Err() == nil {
		r.say(fmt.Sprintf("writing the event log: %v", err))
	}
}

// incompleteLog makes the run FAILED (exit 1, "error") when its event log
// failed, however its phases ended: the sentinel must not say DONE over a
// log missing lines.
func (r *runner) incompleteLog(res Result) Result {
	// The sentinel follows: every line queued by a batched writer must be
	// in the log first. Flush returns within the writer's stall bound.
	err := r.o.Writer.Flush()
	if err == nil {
		return res
	}
	r.say(fmt.Sprintf("the event log is incomplete, the run is ended: %v", err))
	res.ExitCode, res.StopReason, res.Reason = sentinel.ExitFailure, sentinel.StopError, ""
	return res
}

// fail reports a loop-level failure to the user and the stream.
func (r *runner) fail(msg string) {
	r.say(msg)
	r.emit(event.Event{"event": string(event.TypeError), "source": "loop", "message": msg})
}

func (r *runner) say(msg string) {
	r.stderrMu.Lock()
	fmt.Fprintf(r.o.Stderr, "avenor: %s\n", msg)
	r.stderrMu.Unlock()
}

// writeSentinel writes the run's one sentinel, if it has one, and returns
// (after telling stderr) why it could not.
func (r *runner) writeSentinel(res Result) error {
	if r.o.SentinelPath == "" {
		return nil
	}
	rec := sentinel.Record{ExitCode: res.ExitCode, SessionID: res.SessionID, StopReason: res.StopReason, RunID: r.o.RunID}
	if res.ExitCode == sentinel.ExitBlocked {
		rec.Reason = res.Reason
	}
	err := sentinel.Write(r.o.SentinelPath, rec)
	if err != nil {
		r.say(fmt.Sprintf("writing sentinel: %v", err))
	}
	return err
}

// chain is what the next phase of a section may build on: the previous
// phase's session and identity (resume_from_previous), and HEAD when it
// started (base) and when it ended (commit) for the git deltas.
type chain struct {
	session      string
	identity     Identity
	base, commit string
}

// phaseResult is how one phase ended for the loop.
type phaseResult struct {
	StopReason sdk.StopReason
	SessionID  string
	Marker     Marker
	Skips      []string
}

func (p phaseResult) clean() bool { return sentinel.ExitCode(p.StopReason) == sentinel.ExitOK }

// loop runs a loop config; nested runs call it with no initial prompt.
func (r *runner) loop(ctx context.Context, cfg *LoopConfig, initial string) Result {
	pre := withInitial(cfg.Pre, initial)
	sections := map[string][]Phase{KindPre: pre, KindLoop: cfg.Loop, KindPost: cfg.Post}
	start := event.Event{"event": string(event.TypeLoopStart), "max_iterations": cfg.MaxIterations,
		"pre_phase_count": len(pre), "loop_phase_count": len(cfg.Loop)}
	if len(cfg.Post) > 0 {
		start["post_phase_count"] = len(cfg.Post)
	}
	r.emit(start)

	m := NewMachine(len(pre), len(cfg.Loop), len(cfg.Post), cfg.MaxIterations)
	var ch chain
	session := ""
	names := map[Step]string{}
	for {
		step, ok := m.Next()
		if !ok {
			break
		}
		if ctx.Err() != nil {
			m.Stop(stopReason(ctx))
			break
		}
		p := &sections[step.Kind][step.Index]
		names[step] = p.Name
		d := delta(ctx, r.o.Git, r.o.Dir, ch.base, ch.commit)
		vars := LoopVars{RunID: r.o.RunID, Phase: p.Name, Iteration: step.Iteration, MaxIterations: cfg.MaxIterations,
			WorkDir: r.o.Dir, PrevPhaseCommit: d.PrevPhaseCommit, DiffStat: d.DiffStat, ChangedFiles: d.ChangedFiles}
		// resume_from_previous: never on pre phases nor a section's first.
		resumable := step.Kind != KindPre && step.Index > 0
		res := r.phase(ctx, p, step.Kind, step.Iteration, vars, cfg.Roster, &ch, resumable, "")
		if res.SessionID != "" {
			session = res.SessionID
		}
		if ctx.Err() != nil {
			m.Stop(stopReason(ctx))
			break
		}
		m.Done(PhaseEnd{StopReason: res.StopReason, Marker: res.Marker})
	}
	end := m.End()
	ev := event.Event{"event": string(event.TypeLoopEnd), "iterations_completed": end.Iterations, "exit_reason": end.Reason}
	r.decided(ev, end, names[end.Decider], true)
	r.emit(ev)
	return result(end, session)
}

// decided adds the end event's label and deciding phase (and, for a loop,
// its iteration).
func (r *runner) decided(ev event.Event, end End, phase string, iteration bool) {
	if (end.Reason == ReasonMarker || end.Reason == ReasonAbort) && end.Label != "" {
		ev["exit_label"] = end.Label
	}
	if end.Decider.Kind != "" && phase != "" {
		ev["exit_phase"] = phase
		ev["exit_phase_kind"] = end.Decider.Kind
		if iteration {
			ev["exit_iteration"] = end.Decider.Iteration
		}
	}
}

func result(end End, session string) Result {
	res := Result{ExitCode: end.ExitCode, StopReason: end.StopReason, SessionID: session, ExitReason: end.Reason}
	if end.Reason == ReasonAbort {
		res.Reason = end.Label
	}
	return res
}

func withInitial(pre []Phase, initial string) []Phase {
	if initial == "" {
		return pre
	}
	return append([]Phase{{Name: InitialPhase, Prompt: initial, literal: true}}, pre...)
}

// phase runs one phase between its avenor.phase.start and avenor.phase.end.
func (r *runner) phase(ctx context.Context, p *Phase, kind string, iteration int, vars any, roster *Roster, ch *chain, resumable bool, extra string) phaseResult {
	r.emit(event.Event{"event": string(event.TypePhaseStart), "phase": p.Name, "iteration": iteration, "kind": kind})
	base := head(ctx, r.o.Git, r.o.Dir)
	var res phaseResult
	var id Identity
	switch {
	case p.NestedLoop != nil:
		res = nested(r.loop(ctx, p.NestedLoop, ""))
	case p.NestedTeam != nil:
		res = nested(r.team(ctx, p.NestedTeam, ""))
	default:
		res, id = r.direct(ctx, p, kind, iteration, vars, roster, ch, resumable, extra)
	}
	end := event.Event{"event": string(event.TypePhaseEnd), "phase": p.Name, "iteration": iteration, "kind": kind,
		"stop_reason": string(res.StopReason)}
	if res.SessionID != "" {
		end[event.KeySessionID] = res.SessionID
	}
	// Markers are acted on only when the phase ended naturally, so only
	// then does phase.end carry them; abort wins over exit.
	if res.clean() {
		switch res.Marker.Directive {
		case Abort:
			end["abort_marker"] = true
			if res.Marker.Label != "" {
				end["abort_marker_label"] = res.Marker.Label
			}
		case Exit:
			end["exit_marker"] = true
			if res.Marker.Label != "" {
				end["exit_marker_label"] = res.Marker.Label
			}
		}
	}
	r.emit(end)
	ch.session, ch.identity = res.SessionID, id
	ch.base, ch.commit = base, head(context.WithoutCancel(ctx), r.o.Git, r.o.Dir)
	return res
}

// nested is a nested run's end as its phase's: a clean run is end_turn, an
// aborted one end_turn with its abort marker (so the parent aborts with
// the same label), anything else the run's stop reason.
func nested(res Result) phaseResult {
	switch res.ExitCode {
	case sentinel.ExitOK:
		return phaseResult{StopReason: sentinel.StopEndTurn}
	case sentinel.ExitBlocked:
		return phaseResult{StopReason: sentinel.StopEndTurn, Marker: Marker{Directive: Abort, Label: res.Reason}}
	}
	return phaseResult{StopReason: res.StopReason}
}

// direct runs a prompt phase as one session.
func (r *runner) direct(ctx context.Context, p *Phase, kind string, iteration int, vars any, roster *Roster, ch *chain, resumable bool, extra string) (phaseResult, Identity) {
	failed := phaseResult{StopReason: sentinel.StopError}
	id, err := r.o.Identity.forPhase(p, kind, roster)
	if err != nil {
		r.fail(err.Error())
		return failed, id
	}
	resume := ""
	if p.ResumeFromPrevious && resumable && ch.session != "" {
		if !ch.identity.sameSession(id) {
			r.fail(fmt.Sprintf("phase %q: resume_from_previous needs the previous phase's backend, agent and model; it ran with %s, this phase with %s",
				p.Name, ch.identity, id))
			return failed, id
		}
		resume = ch.session
	}
	prompt := p.Prompt
	if !p.literal {
		if prompt, err = Render(p.Name, p.Prompt, vars); err != nil {
			r.fail(fmt.Sprintf("phase %q: %v", p.Name, err))
			return failed, id
		}
	}
	prompt += extra
	if err := sdk.CheckPrompt("rendered prompt", prompt); err != nil {
		r.fail(fmt.Sprintf("phase %q: %v", p.Name, err))
		return failed, id
	}

	sc := &Scanner{}
	nudges := 0
	var follow func() (string, bool)
	if max := p.maxNudges(); max > 0 {
		follow = func() (string, bool) {
			missing := missingFiles(r.o.Dir, p.Requires)
			if len(missing) == 0 || nudges >= max {
				return "", false
			}
			nudges++
			return nudgeText(p, missing), true
		}
	}
	out := r.o.Phases(ctx, Spec{Name: p.Name, Kind: kind, Iteration: iteration, Prompt: prompt, Identity: id,
		Resume: resume, OnEvent: sc.Observe, FollowUp: follow})
	marker, skips := sc.Result()
	res := phaseResult{StopReason: out.StopReason, SessionID: out.SessionID, Marker: marker, Skips: skips}
	if res.clean() && !p.Requires.empty() {
		if missing := missingFiles(r.o.Dir, p.Requires); len(missing) > 0 {
			r.fail(fmt.Sprintf("phase %q: required files missing or empty after %d nudge(s): %s",
				p.Name, nudges, strings.Join(missing, ", ")))
			res.StopReason = StopIncompleteOutput
		}
	}
	return res, id
}

// StopIncompleteOutput is the stop reason of a phase that ended cleanly
// without the files it requires (exit 1).
const StopIncompleteOutput = "incomplete_output"

// missingFiles lists the requirements not met in dir, in config order.
func missingFiles(dir string, req *Requires) []string {
	if req == nil {
		return nil
	}
	var missing []string
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	for _, f := range req.Files {
		if _, err := os.Stat(abs(f)); err != nil {
			missing = append(missing, f)
		}
	}
	for _, f := range req.NonEmptyFiles {
		st, err := os.Stat(abs(f))
		if err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
			missing = append(missing, f)
		}
	}
	return missing
}

// nudgeText is the follow-up for missing files: the phase's own nudge, or
// one naming them.
func nudgeText(p *Phase, missing []string) string {
	if p.OnIncomplete != nil && strings.TrimSpace(p.OnIncomplete.Nudge) != "" {
		return p.OnIncomplete.Nudge
	}
	return fmt.Sprintf("This phase is not complete yet: these required files are missing or empty: %s. Create them, then finish.",
		strings.Join(missing, ", "))
}
