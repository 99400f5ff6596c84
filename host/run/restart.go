package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/avenor-go/avenor/host/event"
	hostrt "github.com/avenor-go/avenor/host/runner"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Restart with resume: the runtime's process is stopped and the run goes
// on in a fresh one, on the same session, possibly with a changed spec — a
// watchdog's answer to a hung turn, a sandbox widened after an approval.
// For the harness it is one run: one event stream (the stopped turn has no
// session.end; avenor.restarted, then the fresh turn's session.start), one
// sentinel and one exit, the last turn's.

// Bounds of a restart.
const (
	// MaxRestarts bounds how often one run (the run of `avenor run`, or
	// one run of a stable runtime) is restarted; one more is refused.
	MaxRestarts = 100
	// MaxRestartReason bounds, in bytes, a restart's reason (its
	// avenor.restarted event's reason).
	MaxRestartReason = 64
)

// Errors of Restart.
var (
	// ErrRestartRefused: the runtime cannot be restarted now or at all;
	// nothing was stopped. The message says why.
	ErrRestartRefused = errors.New("cannot restart the runtime")
	// ErrNoResume: the backend cannot resume a session in a fresh plugin
	// process (resume unsupported, or resume scope in_process); a restart
	// would lose the session.
	ErrNoResume = errors.New("the backend cannot resume a session in a fresh plugin process")
)

// RestartRequest is one restart of a runtime.
type RestartRequest struct {
	// Spec, when set, is what the runtime runs from the fresh process on
	// (its later runs too): its Options, except those that name the run
	// and its session (backend, dir, state dir, run id, label, sentinel
	// and permission files), which must stay as they are, as must
	// RuntimeID, EventLog and ControlSocket; Phased must be nil. Its event
	// writer, permission broker and control identity stay the runtime's:
	// Permissions, HTTPDebug and Attach are not used. Nil: the runtime's
	// spec as it is (Spec returns it, to be changed).
	Spec *Spec
	// Note is the fresh turn's prompt: a short note to the agent on why
	// its turn was restarted. Required; a prompt the wire can carry
	// (UTF-8, at most sdk.MaxPromptBytes).
	Note string
	// Reason is the avenor.restarted event's reason, a token of at most
	// MaxRestartReason bytes of a-z, 0-9, '_', '.', '-' ("watchdog",
	// "sandbox_widened"). Required.
	Reason string
	// Events are written, in order, once the stopped process is gone and
	// just before avenor.restarted, each with the session's id (a widened
	// sandbox's avenor.sandbox.widened). Nil: none.
	Events []event.Event
}

// restartState is the runtime's restarts of the run in flight, under
// Runtime.mu.
type restartState struct {
	// running: a run that can restart is under way (restartable).
	running bool
	// count is how often it restarted.
	count int
	// watchdog is how many of those restarts the watchdog asked for.
	watchdog int
	// pending is the restart asked of its current runner, until the loop
	// takes it.
	pending *pendingRestart
	// stop cancels the whole run (Cancel), the turn between two processes
	// included.
	stop context.CancelCauseFunc
}

type pendingRestart struct {
	req RestartRequest
	// begun gets nil once the fresh turn's runner is current, or why the
	// run ended instead; it is buffered, sent to once.
	begun chan error
}

// errNoFreshTurn: the run ended (on its own, a timeout, its log failing)
// before the restart could begin its fresh turn.
var errNoFreshTurn = errors.New("the run ended before its fresh turn began")

// Restart stops the process of the runtime's run (its plugin and the
// runtime under it: the turn in flight is cancelled as on Cancel, within
// the cancel budget) and goes on with a fresh process on the same session
// — resumed, prompted with req.Note — with req.Spec when set, on the same
// event writer, broker and control identity: a subscriber sees one
// stream, in which the stopped turn has no session.end and an
// avenor.restarted{session_id, reason, attempt} precedes the fresh turn's
// session.start. The run's sentinel and exit are its last turn's. A
// restart is refused (ErrRestartRefused, nothing stopped) for a runtime
// with no run whose plugin runs, a phased run, a run that is ending
// (cancelled, timed out, over) or already restarting, one with no session
// open yet, one restarted MaxRestarts times, and a backend that cannot
// resume across processes (ErrNoResume too).
//
// Restart returns once the fresh turn's runner is the runtime's current
// run, or when ctx ends (the restart then still goes on), or with why the
// run ended instead. It waits for the run to stop its turn: do not call it
// on the run's own goroutines (an Observer, OnEvent, a permission
// handler).
func (rt *Runtime) Restart(ctx context.Context, req RestartRequest) error {
	if err := req.check(); err != nil {
		return err
	}
	rt.mu.Lock()
	cur, st := rt.cur, rt.restart
	rt.mu.Unlock()
	r, isRunner := cur.(*hostrt.Runner)
	switch {
	case cur == nil || (isRunner && !st.running):
		return refused("no run is under way")
	case !isRunner:
		return refused("a loop or team run is restarted phase by phase, not as a whole")
	case st.pending != nil:
		return refused("a restart is already under way")
	case st.count >= MaxRestarts:
		return refused(fmt.Sprintf("the run was restarted %d times (the most allowed)", MaxRestarts))
	}
	sessionID := r.Status().SessionID
	if sessionID == "" {
		return refused("no session is open yet: there is nothing to resume")
	}
	info, ok := rt.backendInfo()
	if !ok {
		return refused("no plugin process runs (the run is between attempts)")
	}
	if err := CanResume(info); err != nil {
		return fmt.Errorf("%w: session %s: %w", ErrRestartRefused, sessionID, err)
	}
	if req.Spec != nil {
		if err := rt.sameRun(*req.Spec); err != nil {
			return err
		}
	}
	p := &pendingRestart{req: req, begun: make(chan error, 1)}
	rt.mu.Lock()
	if rt.cur != cur || rt.restart.pending != nil || !rt.restart.running {
		rt.mu.Unlock()
		return refused("the run changed meanwhile (it ended, or another restart began)")
	}
	rt.restart.pending = p
	rt.mu.Unlock()
	if err := r.Restart(); err != nil {
		rt.mu.Lock()
		if rt.restart.pending == p {
			rt.restart.pending = nil
		}
		rt.mu.Unlock()
		return fmt.Errorf("%w: %w", ErrRestartRefused, err)
	}
	select {
	case err := <-p.begun:
		return err
	case <-ctx.Done():
		return fmt.Errorf("the runtime is restarting, its fresh turn had not begun: %w", context.Cause(ctx))
	}
}

func refused(why string) error { return fmt.Errorf("%w: %s", ErrRestartRefused, why) }

// CanResume says why a backend cannot go on with a session in a fresh
// plugin process (ErrNoResume), nil when it can: resume supported, resume
// scope cross_process.
func CanResume(info sdk.BackendInfo) error {
	if info.Capability(sdk.CapResume) == sdk.Unsupported {
		return fmt.Errorf("%w: backend %s does not support resume", ErrNoResume, info.Name)
	}
	if info.ResumeScope != sdk.ResumeCrossProcess {
		scope := info.ResumeScope
		if scope == "" {
			scope = "not declared"
		}
		return fmt.Errorf("%w: backend %s continues a session only inside the plugin process that holds it (resume scope %s), so a restart would lose it", ErrNoResume, info.Name, scope)
	}
	return nil
}

func (req RestartRequest) check() error {
	if req.Note == "" {
		return refused("a restart needs a note: the fresh turn's prompt to the agent")
	}
	if err := sdk.CheckPrompt("the restart note", req.Note); err != nil {
		return fmt.Errorf("%w: %w", ErrRestartRefused, err)
	}
	if req.Reason == "" || len(req.Reason) > MaxRestartReason {
		return refused(fmt.Sprintf("a restart's reason must be a token of 1 to %d bytes, not %d", MaxRestartReason, len(req.Reason)))
	}
	for _, c := range []byte(req.Reason) {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return refused(fmt.Sprintf("a restart's reason %q may hold only a-z, 0-9, '_', '.' and '-'", req.Reason))
		}
	}
	return nil
}

// Spec is the runtime's spec as it runs now (a restart's Spec when one
// changed it): a restart's caller changes a copy of it.
func (rt *Runtime) Spec() Spec {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.spec
}

// sameRun refuses a restart's spec that would change what names the run
// and its session.
func (rt *Runtime) sameRun(next Spec) error {
	cur := rt.Spec()
	if next.Phased != nil {
		return refused("a restart's spec cannot make the run a loop or team run")
	}
	if next.Options.Launch == nil {
		return refused("a restart's spec has no Launch")
	}
	a, b := cur.Options, next.Options
	for _, f := range []struct{ name, was, is string }{
		{"runtime id", cur.RuntimeID, next.RuntimeID},
		{"event log", cur.EventLog, next.EventLog},
		{"control socket", cur.ControlSocket, next.ControlSocket},
		{"backend", a.Backend, b.Backend},
		{"dir", a.Dir, b.Dir},
		{"state dir", a.StateDir, b.StateDir},
		{"run id", a.RunID, b.RunID},
		{"label", a.Label, b.Label},
		{"sentinel path", a.SentinelPath, b.SentinelPath},
		{"permission file base", a.PermBase, b.PermBase},
	} {
		if f.was != f.is {
			return refused(fmt.Sprintf("a restart continues the same run and session: its %s cannot change (%q, not %q)", f.name, f.was, f.is))
		}
	}
	return nil
}

// backendInfo is the backend of the current run's live plugin; false when
// none runs.
func (rt *Runtime) backendInfo() (sdk.BackendInfo, bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for i := len(rt.plugins) - 1; i >= 0; i-- {
		if l := rt.plugins[i]; !exited(l) && l.Backend != nil {
			return l.Backend.Info(), true
		}
	}
	return sdk.BackendInfo{}, false
}

// restartable is run (a runner's Run, the runtime's current run) going on
// in a fresh runner each time Restart stops it, until a runner ends
// without a restart: its result is the run's.
func (rt *Runtime) restartable(run func(context.Context) hostrt.Result) func(context.Context) hostrt.Result {
	return func(ctx context.Context) hostrt.Result {
		started := time.Now()
		// Cancel reaches the run between two runners too.
		ctx, stop := context.WithCancelCause(ctx)
		defer stop(nil)
		rt.mu.Lock()
		rt.restart = restartState{running: true, stop: stop}
		rt.mu.Unlock()
		defer rt.endRestarts()
		for {
			res := run(ctx)
			if !res.Restarted {
				return res
			}
			rt.mu.Lock()
			p := rt.restart.pending
			rt.restart.pending = nil
			rt.restart.count++
			n := rt.restart.count
			if p != nil && p.req.Spec != nil {
				rt.spec.Options = restartedOptions(rt.spec.Options, p.req.Spec.Options)
			}
			o := rt.spec.Options
			prev, _ := rt.cur.(*hostrt.Runner)
			rt.mu.Unlock()
			// A runner restarts only for a pending restart; one restarted
			// behind Restart's back still resumes, with a neutral note.
			note, reason := "Your previous process was stopped; continue where you left off.", "unknown"
			if p != nil {
				note, reason = p.req.Note, p.req.Reason
				rt.writeBefore(res.SessionID, p.req.Events)
			}
			rt.writeRestarted(res.SessionID, reason, n)
			turns := 0
			if prev != nil {
				turns = prev.Turns()
			}
			o.Prompt, o.Resume, o.TurnsBefore = note, res.SessionID, turns
			if o.Timeout > 0 { // the run's clock goes on
				o.Timeout = max(o.Timeout-time.Since(started), time.Nanosecond)
			}
			fresh := rt.freshRunner(o, res.Queued)
			if prev != nil { // status views still show why it restarted
				fresh.CarryWatchdog(prev.WatchdogFired())
			}
			run = fresh.Run
			if p != nil {
				p.begun <- nil
			}
		}
	}
}

// endRestarts ends the run's restarts: a restart still pending learns that
// the run ended first.
func (rt *Runtime) endRestarts() {
	rt.mu.Lock()
	p := rt.restart.pending
	rt.restart = restartState{}
	rt.mu.Unlock()
	if p != nil {
		p.begun <- errNoFreshTurn
	}
}

// restartedOptions are the options a restart's spec gives the run: next's,
// with what the runtime sets per run (its writer, prompt, resumed session)
// kept from cur.
func restartedOptions(cur, next hostrt.Options) hostrt.Options {
	next.Events, next.Writer = cur.Events, cur.Writer
	next.Prompt, next.Resume, next.Held, next.Images = cur.Prompt, cur.Resume, cur.Held, cur.Images
	next.Reattach, next.AdoptTurn, next.AdoptedEvents = cur.Reattach, cur.AdoptTurn, cur.AdoptedEvents
	return next
}

// freshRunner makes a runner of o (prompt and resume set) the runtime's
// current run, on its writer and broker, in a plugin process of its own,
// with queued (the prompts the stopped runner had accepted) queued first.
func (rt *Runtime) freshRunner(o hostrt.Options, queued []string) *hostrt.Runner {
	o.Writer, o.Events, o.Held = rt.w, nil, nil
	o.Reattach, o.AdoptTurn, o.AdoptedEvents = nil, false, nil
	o.Observer = observers{rt, o.Observer}
	o.Launch = rt.tracked(o.Launch)
	rt.armWatchdog(&o)
	rt.armRecover(&o)
	rt.armRateLimit(&o, nil)
	runner := hostrt.New(o, hostrt.BrokerPermissions(rt.broker))
	for _, q := range queued { // accepted before the restart: they still run
		if err := runner.Prompt(q); err != nil {
			rt.log.Error("a queued prompt was lost in a restart", "error", err)
		}
	}
	rt.begin(runner)
	return runner
}

// writeRestarted writes the avenor.restarted event of the n-th restart.
func (rt *Runtime) writeRestarted(sessionID, reason string, n int) {
	ev := event.Event{"event": string(event.TypeRestarted), "reason": reason, "attempt": n}
	if sessionID != "" {
		ev[event.KeySessionID] = sessionID
	}
	if _, err := rt.w.Write(ev); err != nil {
		// The fresh runner's log watcher ends the run over a failed log.
		rt.log.Error("writing an event failed", "error", err)
	}
}

// writeBefore writes a restart's own events (RestartRequest.Events) on the
// session sessionID.
func (rt *Runtime) writeBefore(sessionID string, evs []event.Event) {
	for _, ev := range evs {
		if sessionID != "" {
			ev[event.KeySessionID] = sessionID
		}
		if _, err := rt.w.Write(ev); err != nil {
			rt.log.Error("writing an event failed", "error", err)
		}
	}
}

// stopRestartable cancels the run that can restart, the turn between two
// processes included (Cancel).
func (rt *Runtime) stopRestartable() {
	rt.mu.Lock()
	stop := rt.restart.stop
	rt.mu.Unlock()
	if stop != nil {
		stop(hostrt.ErrInterrupted)
	}
}

// stopRestarting cancels a run whose restart is under way, so that no
// fresh process follows a Kill; a run not restarting is left to the kill.
func (rt *Runtime) stopRestarting() {
	rt.mu.Lock()
	stop := rt.restart.stop
	if rt.restart.pending == nil {
		stop = nil
	}
	rt.mu.Unlock()
	if stop != nil {
		stop(hostrt.ErrInterrupted)
	}
}
