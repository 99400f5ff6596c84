package loop

import (
	"context"
	"fmt"
	"sync"

	"github.com/avenor-go/avenor/host/event"
	hostrt "github.com/avenor-go/avenor/host/runner"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Backend is how to run one backend: its plugin and its config, as
// host/run resolves it.
type Backend = hostrt.Backend

// Runtimes runs each phase as a host/runner run of its own — its plugin
// process, its session, its retries with backoff — writing into the loop's
// one stream (Base.Writer). It also answers for the whole loop to a control
// plane: Status, Prompt and InterruptAndPrompt act on the phase in flight,
// Cancel on the run.
type Runtimes struct {
	// Base holds every phase's run options: Dir, RunID, Label, Writer
	// (required), MaxRetries, ProgressTimeout, AutoApprove, PermBase,
	// Logger, Stderr… Per phase the loop sets Backend, Agent, Model,
	// Thinking, Prompt, Resume, OnEvent and FollowUp, and clears Timeout
	// (the loop keeps the run's clock) and SentinelPath (the loop writes
	// the run's one sentinel).
	Base hostrt.Options
	// Backend resolves a backend name; an error fails the phase.
	Backend func(name string) (Backend, error)
	// Permissions is every phase's permission resolver; nil: a broker with
	// Base.AutoApprove only.
	Permissions hostrt.PermissionsFunc
	// SerialPermissions makes parallel phases (team members) wait for each
	// other's permission decisions, so one file handler serves them one
	// request at a time.
	SerialPermissions bool
	// CancelRun cancels the whole run (the control plane's cancel).
	CancelRun func()
	// Launch applies a phase's own permission mode and launch context
	// (Spec.Identity.LaunchKeys, when set) over Base's, and returns the
	// permission resolver of a phase whose mode is its own (nil: keep
	// Permissions). Nil refuses every phase that sets them: a phase never
	// runs broader than its config asks.
	Launch func(k LaunchKeys, o *hostrt.Options) (hostrt.PermissionsFunc, error)

	mu      sync.Mutex
	running []*hostrt.Runner // in start order
	sem     chan struct{}
}

// Run implements PhaseFunc.
func (rt *Runtimes) Run(ctx context.Context, s Spec) Outcome {
	b, err := rt.Backend(s.Identity.Backend)
	if err != nil {
		msg := fmt.Sprintf("phase %q: %v", s.Name, err)
		_, _ = rt.Base.Writer.Write(event.Event{"event": string(event.TypeError), "source": "backend", "message": msg})
		if rt.Base.Stderr != nil {
			fmt.Fprintf(rt.Base.Stderr, "avenor: %s\n", msg)
		}
		return Outcome{StopReason: sdk.StopError}
	}
	o := rt.Base
	b.Name = s.Identity.Backend
	b.Apply(&o)
	o.Agent, o.Model, o.Thinking = s.Identity.Agent, s.Identity.Model, s.Identity.Thinking
	o.Prompt, o.Resume = s.Prompt, s.Resume
	o.OnEvent, o.FollowUp = s.OnEvent, s.FollowUp
	o.Timeout, o.SentinelPath, o.Events = 0, "", nil
	perms, err := rt.phaseLaunch(s.Identity.LaunchKeys, &o)
	if err != nil {
		return rt.failPhase(s, err)
	}
	if perms != nil && rt.SerialPermissions {
		perms = rt.serial(perms)
	}
	runner := hostrt.New(o, perms)
	rt.track(runner, true)
	defer rt.track(runner, false)
	res := runner.Run(ctx)
	return Outcome{StopReason: res.StopReason, SessionID: res.SessionID}
}

func (rt *Runtimes) track(r *hostrt.Runner, on bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if on {
		rt.running = append(rt.running, r)
		return
	}
	for i, x := range rt.running {
		if x == r {
			rt.running = append(rt.running[:i], rt.running[i+1:]...)
			return
		}
	}
}

// current is the phase run in flight (the latest started), or nil.
func (rt *Runtimes) current() *hostrt.Runner {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.running) == 0 {
		return nil
	}
	return rt.running[len(rt.running)-1]
}

// Status is the status of the phase in flight; between phases, an idle
// snapshot of the run.
func (rt *Runtimes) Status() hostrt.Status {
	if r := rt.current(); r != nil {
		return r.Status()
	}
	return hostrt.Status{RunID: rt.Base.RunID, RunLabel: rt.Base.Label, Phase: hostrt.PhaseIdle,
		TurnState: hostrt.TurnIdle, LatestSeq: rt.Base.Writer.LatestSeq()}
}

// SessionID is the session of the phase in flight, "" between phases.
func (rt *Runtimes) SessionID() string {
	if r := rt.current(); r != nil {
		return r.Status().SessionID
	}
	return ""
}

// Prompt queues text on the phase in flight.
func (rt *Runtimes) Prompt(text string) error {
	if r := rt.current(); r != nil {
		return r.Prompt(text)
	}
	return errNoPhase
}

// InterruptAndPrompt interrupts the phase in flight with text.
func (rt *Runtimes) InterruptAndPrompt(text string, keepQueue bool) error {
	if r := rt.current(); r != nil {
		return r.InterruptAndPrompt(text, keepQueue)
	}
	return errNoPhase
}

// Cancel cancels the whole run.
func (rt *Runtimes) Cancel() {
	if rt.CancelRun != nil {
		rt.CancelRun()
	}
}

// Events is the run's stream.
func (rt *Runtimes) Events() *event.Writer { return rt.Base.Writer }

var errNoPhase = fmt.Errorf("%w: no phase is running", hostrt.ErrRunEnded)

// serial wraps perms so that one decision is awaited at a time across all
// phases of the run.
func (rt *Runtimes) serial(perms hostrt.PermissionsFunc) hostrt.PermissionsFunc {
	rt.mu.Lock()
	if rt.sem == nil {
		rt.sem = make(chan struct{}, 1)
	}
	sem := rt.sem
	rt.mu.Unlock()
	return func(sessionID string) hostrt.Permissions {
		return serialPermissions{inner: perms(sessionID), sem: sem}
	}
}

type serialPermissions struct {
	inner hostrt.Permissions
	sem   chan struct{}
}

// Record announces at once; the wait for a decision queues.
func (s serialPermissions) Record(ctx context.Context, req sdk.PermissionRequest, emit func(event.Event)) func(context.Context) (sdk.PermissionDecision, error) {
	wait := s.inner.Record(ctx, req, emit)
	return func(ctx context.Context) (sdk.PermissionDecision, error) {
		select {
		case s.sem <- struct{}{}:
			defer func() { <-s.sem }()
		case <-ctx.Done():
		}
		return wait(ctx)
	}
}

// RecordQuestion passes a runtime's question to the inner broker when it
// hears questions (hostrt.Questions); questions are not serialised, as
// they decide nothing an agent may do.
func (s serialPermissions) RecordQuestion(ctx context.Context, req sdk.QuestionRequest, emit func(event.Event)) func(context.Context) (sdk.QuestionAnswer, error) {
	if q, ok := s.inner.(hostrt.Questions); ok {
		return q.RecordQuestion(ctx, req, emit)
	}
	return func(context.Context) (sdk.QuestionAnswer, error) { return sdk.QuestionAnswer{}, nil }
}
