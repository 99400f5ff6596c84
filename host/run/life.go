package run

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/loop"
	"github.com/avenor-go/avenor/host/plugins"
	hostrt "github.com/avenor-go/avenor/host/runner"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// A supervised runtime's life (Deps.Owner set: a runtime of `avenor
// stable`): its runs one after the other, each in the background; parked
// between them, keeping the plugin that holds its session; follow-up
// prompts that continue that session; and why it can take none. Its owner
// keeps what is a supervisor's — admission, the reap of a parked runtime,
// how many parked runtimes keep a plugin, the durable record — and hears
// of the runtime's changes through Owner.

// Where a supervised runtime is.
type State int

const (
	Running State = iota // a run executes (from spawn or a follow-up)
	Parked               // the run ended; follow-ups continue it
	Gone                 // reaped, or its supervisor stopped it
)

// Errors of a follow-up a runtime refuses.
var (
	// ErrSessionLost: a parked runtime's in_process session died with its
	// plugin and cannot be continued.
	ErrSessionLost = errors.New("session lost")
	// ErrRuntimeEnded: the runtime's turn did not end well (cancelled, its
	// plugin died, an error or a timeout), so it is ended and takes no
	// follow-up (docs/stable.md#runtimes).
	ErrRuntimeEnded = errors.New("runtime ended")
)

// Owner is a supervised runtime's supervisor. The runtime calls it without
// its own lock held; the owner may call the runtime back (lock order:
// owner, then runtime).
type Owner interface {
	// Changed: the runtime's durable record changed.
	Changed()
	// Durable returns once the runtime's record as it is now is durable,
	// with the write's error (refused: nothing of a follow-up runs).
	Durable() error
	// Stopping is the error of a supervisor that starts nothing new, nil
	// while it runs.
	Stopping() error
	// Gone is the error of a prompt to a runtime that is gone.
	Gone() error
	// Admit takes an executing slot for a follow-up of the parked runtime
	// and voids its pending reap; an error refuses the prompt.
	Admit() error
	// Refused gives the slot Admit took back: the follow-up did not run.
	Refused()
	// Ended: a run ended. The owner settles the runtime (Settle) and
	// returns the kept plugins to stop, which the runtime closes once it
	// has parked.
	Ended(res hostrt.Result) []*hostrt.HeldSession
	// Unkept: the runtime no longer keeps h (its plugin exited, or a run
	// took it over; nil: whatever it kept).
	Unkept(h *hostrt.HeldSession)
	// PhaseSlot takes an executing slot for one phase of a phased run.
	PhaseSlot(ctx context.Context) (release func(), err error)
	// Describe adds the owner's fields to the runtime's entry (Entry).
	Describe(entry map[string]any)
}

// life is the supervised part of a runtime; its fields are under mu,
// which is taken before Runtime.mu, never under it.
type life struct {
	owner Owner
	// runs counts the run goroutines, watchers the kept plugins' watchers
	// (the owner's shutdown waits for both).
	runs, watchers *sync.WaitGroup
	// ready is closed at the first session.start or the end of the first
	// run: a spawn answers with the session id then.
	ready     chan struct{}
	readyOnce sync.Once

	mu        sync.Mutex
	state     State
	cancelRun context.CancelCauseFunc
	runDone   chan struct{} // closed when the current run has parked
	nruns     int
	launched  *plugins.Launched // the current (or kept) plugin
	plugin    string
	scope     string // the backend's resume scope
	held      *hostrt.HeldSession
	heldStop  chan struct{}
	sessionID string
	result    *hostrt.Result
	parkedAt  int64
	handedTo  string // a later runtime took the parked session over
	lost      string // why the session cannot be continued
	dead      string // recovered, and cannot continue (why)
	plan      *Adopt // the next run takes its turn over (recover.go)
	perms     map[string]*PermissionRecord
	permOrder []string
	// acceptedAt is the log's last seq when a follow-up prompt was
	// accepted, until its run has ended (0: none). With it in the record a
	// successor can tell a prompt that was accepted and whose run left
	// nothing in the log from a turn that ended: the log's lines are
	// durable where the writer's seq may not be yet.
	acceptedAt int64
	// accepting is closed once a follow-up prompt accepted while parked
	// has been made durable (or refused); nil otherwise.
	accepting chan struct{}
	// rateWait is the run's rate-limit wait, nil when it waits for none
	// (ratelimit.go).
	rateWait *RateLimitRecord
}

func newLife(deps Deps, state State) *life {
	g := deps.Group
	if g == nil {
		g = new(Group)
	}
	return &life{owner: deps.Owner, runs: &g.runs, watchers: &g.others, ready: make(chan struct{}), state: state}
}

// Group counts the goroutines of supervised runtimes: their runs, and the
// others (kept plugins' watchers, recorded answers given again).
type Group struct{ runs, others sync.WaitGroup }

// WaitRuns waits up to d for every run to end; false when d passed first.
func (g *Group) WaitRuns(d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		g.runs.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// WaitOthers waits for the other goroutines to end.
func (g *Group) WaitOthers() { g.others.Wait() }

// SpawnAnswer waits, up to wait or until ctx ends, for the runtime's
// first session.start (or the end of its first run) and answers its spawn
// with what the runtime knows (docs/control-protocol.md#spawn): its ids,
// session ("" for a loop or team: every phase has a session of its own),
// files, and the backend, agent, model and label it resolved to.
func (rt *Runtime) SpawnAnswer(ctx context.Context, wait time.Duration) map[string]any {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-rt.life.ready:
	case <-ctx.Done():
	case <-t.C:
	}
	o, sid := rt.spec.Options, rt.Session()
	if rt.spec.Phased != nil {
		sid = ""
	}
	res := map[string]any{
		"runtime_id": rt.spec.RuntimeID, "session_id": sid, "on_event": rt.spec.EventLog, "sentinel_file": o.SentinelPath,
		"run_id": o.RunID, "effective_backend": o.Backend,
	}
	for k, v := range map[string]string{"effective_agent": o.Agent, "effective_model": o.Model, "label": o.Label} {
		if v != "" {
			res[k] = v
		}
	}
	return res
}

func (rt *Runtime) markReady() { rt.life.readyOnce.Do(func() { close(rt.life.ready) }) }

// Facts are a supervised runtime's state for its owner's views.
type Facts struct {
	State     State
	SessionID string
	Runs      int
	Plugin    string
	PluginPID int
	Scope     string
	Kept      bool // it keeps its plugin while parked
	HeldAlive bool // that plugin runs
	HandedTo  string
	Lost      string
	ParkedAt  int64
	Result    *hostrt.Result
	// Refusal is why a parked runtime takes no follow-up, nil when it does.
	Refusal error
}

// Facts are the runtime's state now.
func (rt *Runtime) Facts() Facts {
	l := rt.life
	l.mu.Lock()
	defer l.mu.Unlock()
	f := Facts{
		State: l.state, SessionID: l.sessionID, Runs: l.nruns, Plugin: l.plugin, Scope: l.scope,
		Kept: l.held != nil, HeldAlive: l.held != nil && l.held.Alive(), HandedTo: l.handedTo, Lost: l.lost,
		ParkedAt: l.parkedAt, Result: l.result,
	}
	if l.launched != nil {
		f.PluginPID = l.launched.Client.PID()
	}
	if l.state == Parked {
		f.Refusal = rt.refusalLocked()
	}
	return f
}

// State is where the runtime is.
func (rt *Runtime) State() State {
	rt.life.mu.Lock()
	defer rt.life.mu.Unlock()
	return rt.life.state
}

// InProcess says the runtime's session lives only in its plugin.
func (rt *Runtime) InProcess() bool {
	rt.life.mu.Lock()
	defer rt.life.mu.Unlock()
	return rt.life.scope == sdk.ResumeInProcess
}

// Session is the runtime's current session id; a phased run's is the
// phase's in flight.
func (rt *Runtime) Session() string {
	if rt.spec.Phased != nil || rt.life == nil {
		return rt.Snapshot().SessionID
	}
	rt.life.mu.Lock()
	defer rt.life.mu.Unlock()
	return rt.life.sessionID
}

// Ask writes a child runtime's question (send_to_parent) into the
// runtime's stream, in its current session.
func (rt *Runtime) Ask(childID, message, requestID string) error {
	ev := event.Event{"event": string(event.TypeChildQuestion), "child_id": childID, "message": message, "request_id": requestID}
	if sid := rt.Session(); sid != "" {
		ev[event.KeySessionID] = sid
	}
	_, err := rt.w.Write(ev)
	return err
}

// remember notes the plugin a run of the runtime launched.
func (rt *Runtime) remember(p *plugins.Launched) {
	l := rt.life
	if l == nil {
		return
	}
	l.mu.Lock()
	l.plugin = p.Client.Info().Name
	if rt.spec.Phased == nil {
		l.launched, l.scope = p, p.Backend.Info().ResumeScope
	}
	l.mu.Unlock()
	if rt.spec.Phased == nil {
		l.owner.Changed() // its reattach config
	}
}

// Takes makes the runtime continue a session another plugin kept: a warm
// pool's, or a parked runtime's it resumes (HandOver).
func (rt *Runtime) Takes(plugin, scope string) {
	rt.life.mu.Lock()
	rt.life.plugin, rt.life.scope = plugin, scope
	rt.life.mu.Unlock()
}

// HandOver gives the plugin the parked runtime keeps for sessionID to the
// runtime to that resumes that session; its follow-ups then point to it.
// ok is false when the runtime is not parked with that session.
func (rt *Runtime) HandOver(sessionID, to string) (h *hostrt.HeldSession, plugin, scope string, ok bool) {
	l := rt.life
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != Parked || l.sessionID != sessionID || l.handedTo != "" {
		return nil, "", "", false
	}
	l.handedTo = to
	return rt.takeHeldLocked(), l.plugin, l.scope, true
}

// Go starts a run of t in the background with the runtime's executing
// slot taken; its owner hears Ended when it has ended.
func (rt *Runtime) Go(t Turn) {
	l := rt.life
	l.mu.Lock()
	defer l.mu.Unlock()
	rt.goTurnLocked(t)
}

func (rt *Runtime) goTurnLocked(t Turn) {
	l := rt.life
	ctx, cancel := context.WithCancelCause(context.Background())
	if p := l.plan; p != nil {
		t.Adopt, l.plan = p, nil
		l.launched = p.Plugin
	}
	run := rt.Begin(t)
	if t.Held != nil {
		// A warm pool's, or a parked runtime's the run continues.
		p := t.Held.Plugin()
		l.launched, l.plugin, l.scope = p, p.Client.Info().Name, p.Backend.Info().ResumeScope
	}
	rt.goLocked(cancel, func() hostrt.Result { return run(ctx) })
}

// GoPhased starts the runtime's loop or team run with the initial prompt
// ("" for none) in the background, its executing slot taken; every phase
// takes one of its own (Owner.PhaseSlot). Its spawn answers at once:
// every phase has a session of its own.
func (rt *Runtime) GoPhased(initial string) {
	l := rt.life
	o := rt.spec.Options
	ctx, cancel := context.WithCancelCause(context.Background())
	run := rt.BeginPhased(PhasedRun{
		Base: hostrt.Options{
			Dir: o.Dir, DirExplicit: o.DirExplicit, ServerURL: o.ServerURL, RunID: o.RunID, Label: o.Label,
			ProgressTimeout: o.ProgressTimeout, MaxRetries: o.MaxRetries, AutoApprove: o.AutoApprove,
			Watchdog: o.Watchdog, PermBase: o.PermBase, Logger: rt.log, Stderr: o.Stderr, Now: o.Now,
		},
		Initial: initial, Backend: rt.spec.Phased.Backend, Admit: rt.admitted, CancelRun: rt.Cancel,
	})
	l.mu.Lock()
	rt.goLocked(cancel, func() hostrt.Result {
		res := run(ctx)
		return hostrt.Result{ExitCode: res.ExitCode, StopReason: res.StopReason}
	})
	l.mu.Unlock()
	rt.markReady()
}

// admitted makes every phase of the runtime's loop or team hold an
// executing slot while it runs: each phase is a plugin and a session, a
// runtime as the supervisor's limits count them. A team's members run as
// many at a time as the limits allow, the rest waiting for a slot.
func (rt *Runtime) admitted(run loop.PhaseFunc) loop.PhaseFunc {
	return func(ctx context.Context, spec loop.Spec) loop.Outcome {
		release, err := rt.life.owner.PhaseSlot(ctx)
		if err != nil {
			reason := sdk.StopCancelled
			if errors.Is(context.Cause(ctx), hostrt.ErrTimeout) {
				reason = sdk.StopTimeout
			}
			return loop.Outcome{StopReason: reason}
		}
		defer release()
		return run(ctx, spec)
	}
}

// goLocked runs run, the runtime's run begun with its context's cancel,
// and parks the runtime after it; life.mu is held.
func (rt *Runtime) goLocked(cancel context.CancelCauseFunc, run func() hostrt.Result) {
	l := rt.life
	done := make(chan struct{})
	l.cancelRun, l.runDone, l.state = cancel, done, Running
	l.nruns++
	l.runs.Add(1)
	go func() {
		defer l.runs.Done()
		res := run()
		cancel(nil)
		toClose := l.owner.Ended(res)
		// The run's answers are in the log; its history keeps what the
		// control views show of them.
		if err := rt.Park(); err != nil {
			rt.log.Warn("closing the event log of a parked runtime", "error", err)
		}
		close(done)
		rt.markReady()
		l.owner.Changed()
		for _, h := range toClose {
			h.Close()
		}
	}()
}

// Settle parks the runtime after a run (the owner's Ended). With keep
// (its supervisor still runs) and a turn that ended well, the runtime
// keeps the run's plugin for follow-ups and returns it as kept; otherwise
// that plugin is returned to stop.
func (rt *Runtime) Settle(res hostrt.Result, keep bool, now int64) (kept, drop *hostrt.HeldSession) {
	l := rt.life
	l.mu.Lock()
	defer l.mu.Unlock()
	l.result = &res
	l.acceptedAt = 0 // the run flushed its log and wrote its sentinel
	if res.SessionID != "" {
		l.sessionID = res.SessionID
	}
	l.state, l.parkedAt, l.launched = Parked, now, nil
	switch h := res.Held; {
	case h == nil:
	case !keep || rt.endedLocked() != "":
		// An ended runtime takes no follow-up (docs/stable.md#runtimes):
		// nothing is left for its plugin to keep.
		drop = h
	default:
		l.held, l.launched = h, h.Plugin()
		rt.watchHeldLocked(h)
		kept = h
	}
	return kept, drop
}

// watchHeldLocked watches a kept plugin: if it dies while parked, its
// runtime's process group is killed at once and the runtime learns it.
func (rt *Runtime) watchHeldLocked(h *hostrt.HeldSession) {
	l := rt.life
	stop := make(chan struct{})
	l.heldStop = stop
	l.watchers.Add(1)
	go func() {
		defer l.watchers.Done()
		select {
		case <-h.Exited():
		case <-stop:
			return
		}
		l.mu.Lock()
		mine := l.held == h
		if mine {
			l.held, l.heldStop, l.launched = nil, nil, nil
			if l.scope == sdk.ResumeInProcess {
				l.lost = fmt.Sprintf("its plugin %s exited while the runtime was parked", l.plugin)
			}
		}
		plugin := l.plugin
		l.mu.Unlock()
		if mine {
			l.owner.Unkept(h)
			rt.log.Warn("the plugin of a parked runtime exited", "plugin", plugin)
			h.Close()
		}
	}()
}

// Evict takes the kept plugin away from the parked runtime to make room
// for a newer one (the caller closes it); an in_process session is lost
// with it, and its follow-ups say why (maxKept: the owner's bound).
func (rt *Runtime) Evict(maxKept int) *hostrt.HeldSession {
	l := rt.life
	l.mu.Lock()
	defer l.mu.Unlock()
	h := rt.takeHeldLocked()
	if h != nil && l.scope == sdk.ResumeInProcess {
		l.lost = fmt.Sprintf("its plugin %s was stopped while the runtime was parked, to keep at most %d parked runtimes' plugins running (the longest parked stop first)",
			l.plugin, maxKept)
	}
	return h
}

func (rt *Runtime) takeHeldLocked() *hostrt.HeldSession {
	l := rt.life
	h := l.held
	l.held = nil
	if l.heldStop != nil {
		close(l.heldStop)
		l.heldStop = nil
	}
	if h != nil {
		l.launched = nil
	}
	return h
}

// Retire makes the runtime gone (reaped when parked, or its supervisor
// stopping) and returns the plugin it kept, for the caller to close; with
// onlyParked a runtime that is not parked is left as it is (ok false).
func (rt *Runtime) Retire(onlyParked bool) (h *hostrt.HeldSession, ok bool) {
	l := rt.life
	l.mu.Lock()
	defer l.mu.Unlock()
	if onlyParked && l.state != Parked {
		return nil, false
	}
	l.state = Gone
	return rt.takeHeldLocked(), true
}

// cancelRunning stops the running run (stop reason cancelled, exit 130);
// a parked runtime has nothing to cancel.
func (rt *Runtime) cancelRunning() {
	l := rt.life
	l.mu.Lock()
	f := l.cancelRun
	running := l.state == Running
	l.mu.Unlock()
	if running && f != nil {
		f(hostrt.ErrInterrupted)
	}
}

// KillRunning SIGKILLs the running run's plugins (Kill); a parked runtime
// has none running.
func (rt *Runtime) KillRunning() {
	rt.life.mu.Lock()
	running := rt.life.state == Running
	rt.life.mu.Unlock()
	if running {
		rt.Kill()
	}
}

// FollowUp runs text in the runtime: queued (or, with interrupt,
// pre-empting) in the running run, or as a new run that continues a parked
// runtime's session.
func (rt *Runtime) FollowUp(ctx context.Context, text string, interrupt, keepQueue bool) error {
	if text == "" {
		return control.InvalidParams(hostrt.ErrEmptyPrompt.Error())
	}
	if err := sdk.CheckPrompt("text", text); err != nil {
		return control.InvalidParams(err.Error())
	}
	l := rt.life
	id := rt.spec.RuntimeID
	for {
		// A prompt queued in a run the shutdown is about to cancel would be
		// answered accepted and never run.
		if err := l.owner.Stopping(); err != nil {
			return err
		}
		l.mu.Lock()
		switch l.state {
		case Gone:
			l.mu.Unlock()
			return l.owner.Gone()
		case Running:
			started, done := l.nruns > 0, l.runDone
			l.mu.Unlock()
			if !started {
				// Between its spawn's durable record and its first run.
				return fmt.Errorf("runtime %s is starting; prompt it once its spawn has answered", id)
			}
			err := rt.promptRun(text, interrupt, keepQueue)
			// A cancelled run that is still ending its turn (ErrStopping)
			// is an ending run: once it has ended, the prompt continues the
			// session as a prompt that just missed the end does, or is
			// refused with the runtime that the cancel ended.
			stopping := errors.Is(err, hostrt.ErrStopping)
			if !errors.Is(err, hostrt.ErrRunEnded) && !stopping {
				return err
			}
			if rt.spec.Phased != nil && stopping {
				return fmt.Errorf("runtime %s: %w", id, err)
			}
			if rt.spec.Phased != nil {
				// Between two phases: the loop goes on, nothing takes a prompt.
				return fmt.Errorf("runtime %s: %w; prompt again once its next phase has started", id, err)
			}
			select { // the run is ending: continue once it has parked
			case <-done:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if wait := l.accepting; wait != nil {
			// Another prompt is being made durable: this one follows it.
			l.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := rt.accept(); err != nil {
			return err
		}
		return rt.resume(text)
	}
}

// accept takes a follow-up prompt for the parked runtime: its executing
// slot, and acceptedAt, which the durable record must hold before the
// prompt runs (resume); life.mu is held, and released.
func (rt *Runtime) accept() error {
	l := rt.life
	if held := l.held; held != nil && !held.Alive() && l.scope == sdk.ResumeInProcess {
		// Its watcher has not run yet; the run itself closes it.
		l.lost = fmt.Sprintf("its plugin %s exited while the runtime was parked", l.plugin)
	}
	if err := rt.refusalLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	accepting := make(chan struct{})
	l.accepting = accepting
	l.mu.Unlock()
	if err := l.owner.Admit(); err != nil {
		l.mu.Lock()
		l.accepting = nil
		l.mu.Unlock()
		close(accepting)
		return err
	}
	l.mu.Lock()
	l.acceptedAt = rt.w.LatestSeq()
	l.mu.Unlock()
	return nil
}

// resume runs an accepted follow-up prompt once the durable record says
// it was accepted: a supervisor killed before its turn starts leaves the
// successor a prompt to end, not a turn it cannot tell from the one before
// (Recover). A record that cannot be written (a full disk) refuses the
// prompt before anything of it runs, and the runtime stays parked.
func (rt *Runtime) resume(text string) error {
	l := rt.life
	err := l.owner.Durable()
	if err != nil {
		err = fmt.Errorf("prompt refused, nothing of it ran: %w", err)
	} else {
		err = l.owner.Stopping()
	}
	l.mu.Lock()
	done := l.accepting
	l.accepting = nil
	defer close(done)
	gone := err == nil && l.state != Parked // the shutdown retired it meanwhile
	if err != nil || gone {
		l.acceptedAt = 0
		l.mu.Unlock()
		if gone {
			err = l.owner.Gone()
		}
		l.owner.Refused()
		l.owner.Changed()
		return err
	}
	held := rt.takeHeldLocked()
	hostrt.CleanFiles(rt.spec.Options.SentinelPath, rt.spec.Options.PermBase, rt.log.Warn)
	rt.goTurnLocked(Turn{Prompt: text, Resume: l.sessionID, Held: held})
	l.mu.Unlock()
	l.owner.Unkept(held) // nil: whatever it kept
	return nil
}

// promptRun queues text in the current run, or interrupts its turn.
func (rt *Runtime) promptRun(text string, interrupt, keepQueue bool) error {
	rt.mu.Lock()
	r := rt.cur
	rt.mu.Unlock()
	if r == nil {
		return errNoRun
	}
	var err error
	if interrupt {
		err = r.InterruptAndPrompt(text, keepQueue)
	} else {
		err = r.Prompt(text)
	}
	if errors.Is(err, hostrt.ErrEmptyPrompt) {
		return control.InvalidParams(err.Error())
	}
	return err
}

// endedLocked says why the runtime's last run ended it, "" when the run's
// turn ended well (exit code 0) and the runtime parks for follow-ups;
// life.mu is held. docs/stable.md#runtimes: a runtime that was cancelled,
// whose plugin or CLI died, or whose turn ended in error or timed out is
// ended with its exit code and sentinel, so a harness that waits for ended
// never waits for ever.
func (rt *Runtime) endedLocked() string {
	r := rt.life.result
	if r == nil || r.ExitCode == 0 || r.StopReason == sdk.StopBudgetReached {
		// A spend limit pauses the runtime: it parks with its session for
		// set_budget to continue (docs/unattended.md#spend-limits).
		return ""
	}
	return fmt.Sprintf("its turn ended with stop reason %s (exit code %d)", r.StopReason, r.ExitCode)
}

// refusalLocked says why a parked runtime can take no follow-up prompt,
// nil when it can; life.mu is held. A runtime it refuses lists as ended,
// one it would take as idle (docs/control-protocol.md#spawn).
func (rt *Runtime) refusalLocked() error {
	l, id := rt.life, rt.spec.RuntimeID
	if l.dead != "" {
		return fmt.Errorf("%w: runtime %s %s; spawn a new runtime", ErrSessionLost, id, l.dead)
	}
	if ph := rt.spec.Phased; ph != nil {
		return fmt.Errorf("runtime %s ran a %s (%s) that has ended; a follow-up cannot continue it: spawn a new runtime", id, ph.Kind, ph.File)
	}
	if why := rt.endedLocked(); why != "" {
		fix := "spawn a new runtime"
		if l.sessionID != "" {
			fix += fmt.Sprintf(" (with session_id %s to continue its session)", l.sessionID)
		}
		return fmt.Errorf("%w: runtime %s: %s; only a runtime whose turn ended well takes a follow-up: %s", ErrRuntimeEnded, id, why, fix)
	}
	if l.handedTo != "" {
		return fmt.Errorf("runtime %s's session %s continues in runtime %s; prompt %s", id, l.sessionID, l.handedTo, l.handedTo)
	}
	if held := l.held; l.scope == sdk.ResumeInProcess && l.sessionID != "" && (held == nil || !held.Alive()) {
		why := l.lost
		switch {
		case why != "":
		case held != nil:
			why = fmt.Sprintf("its plugin %s exited while the runtime was parked", l.plugin)
		default:
			why = "its plugin is no longer running"
		}
		return fmt.Errorf("%w: runtime %s cannot continue session %s: %s, and backend %s resumes sessions only inside the plugin process that holds them (resume scope in_process); spawn a new runtime",
			ErrSessionLost, id, l.sessionID, why, rt.spec.Options.Backend)
	}
	return nil
}

// The runtime's facts of its sessions, as its runs' observer: never read
// back out of the event stream.

// opened makes the runtime's plugin and session durable before its prompt
// goes out: a supervisor killed during the turn leaves its successor what
// it needs to take the turn over.
func (rt *Runtime) opened(sessionID string) {
	l := rt.life
	rt.noteSession(sessionID)
	// The runtime itself was made durable at its spawn: a write that
	// fails now leaves a successor a runtime to end, and is logged.
	_ = l.owner.Durable()
}

// started: the session's session.start is written; spawn answers now.
func (rt *Runtime) started(sessionID string) {
	rt.noteSession(sessionID)
	rt.markReady()
	rt.life.owner.Changed()
}

// ended: the turn is over: every decision of it reached the runtime (or
// is moot), and nothing of it is pending any more.
func (rt *Runtime) ended(e hostrt.SessionEnd) {
	l := rt.life
	l.mu.Lock()
	l.perms, l.permOrder = nil, nil
	if e.SessionID != "" {
		l.sessionID = e.SessionID
	}
	l.mu.Unlock()
	rt.markReady()
	l.owner.Changed()
}

func (rt *Runtime) noteSession(sessionID string) {
	if sessionID == "" {
		return
	}
	rt.life.mu.Lock()
	rt.life.sessionID = sessionID
	rt.life.mu.Unlock()
}
