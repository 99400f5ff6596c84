package run

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/control/httpdebug"
	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/loop"
	"github.com/avenor-go/avenor/host/permission"
	"github.com/avenor-go/avenor/host/plugins"
	hostrt "github.com/avenor-go/avenor/host/runner"
	"github.com/avenor-go/avenor/sdk/plugin"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Runtime is one runtime: its event writer (and, for a runtime of
// `avenor stable`, its own event log file), its permission broker, its
// runs — a runner each, or the phases of a phased run — with their status,
// session and result. It is a control.Target: the control method table and
// the HTTP debug adapter serve it as it is.
//
// The run of `avenor run` is New, Start, Wait, Close. A supervised
// runtime (Deps.Owner, Spec.EventLog: every runtime of `avenor stable`) is
// New (or Recover, after a supervisor's restart), then a run per prompt in
// the background (Go, GoPhased, FollowUp), parked between them, and Close
// when it is reaped (life.go); its owner decides admission, the reap and
// which parked runtimes keep their plugin.
type Runtime struct {
	spec   Spec
	log    hclog.Logger
	w      *event.Writer
	evlog  *eventLog // Spec.EventLog's, nil without
	broker *permission.Broker

	// Set once by New for the run of `avenor run`.
	runFn     func(context.Context) Result
	startOnce sync.Once
	done      chan struct{}
	res       Result

	mu     sync.Mutex
	cancel context.CancelCauseFunc
	// cur is the current (or last) run: the control plane's way into it.
	cur runRef
	// plugins are the plugins the current run launched or continues in
	// (every phase's, for a phased run): Kill's.
	plugins []*plugins.Launched
	// end is the latest session.end (by seq): result's final_output.
	end hostrt.SessionEnd
	// lastEnd is the last session.end, its final_output cut to
	// MaxKeptFinalOutput runes when lastEndCut (finaloutput.go).
	lastEnd    event.Event
	lastEndCut bool
	// life is a supervised runtime's (Deps.Owner; life.go), nil for the
	// run of `avenor run`.
	life *life
	// debug is a supervised runtime's --http-debug target (DebugTarget);
	// Close ends its streams.
	debug *httpdebug.TableTarget
	// restart is the restarts of the run in flight (restart.go).
	restart restartState
	// recovered is the sandbox requests of its runs, across restarts
	// (sandboxrecover.go).
	recovered recoverBook
}

// runRef is what the control plane reaches in a run: a *hostrt.Runner, or
// a phased run's *loop.Runtimes (status and prompts reach the phase in
// flight, cancel the run).
type runRef interface {
	Status() hostrt.Status
	Prompt(text string) error
	InterruptAndPrompt(text string, keepQueue bool) error
	Cancel()
}

// Deps are what a runtime needs of its owner.
type Deps struct {
	// Control routes the broker's permission requests to a control plane
	// (docs/permission-handler.md#precedence); nil: none yet (SetControl).
	Control permission.ControlResolver
	// Owner, when set, supervises the runtime (life.go): its runs go in
	// the background (Go, GoPhased, FollowUp), parking between them.
	Owner Owner
	// Group, when set, counts a supervised runtime's goroutines (its
	// owner's shutdown waits for them).
	Group *Group
}

// New assembles the runtime of spec — its event writer, its permission
// broker and, for the run of `avenor run`, its runner or the phases of
// spec.Phased — ready to run. Nothing runs yet. With spec.EventLog it
// creates (truncates) that log, refusing a pipe or a device: an error is
// the log's.
func New(spec Spec, deps Deps) (*Runtime, error) {
	rt := newRuntime(spec)
	if spec.EventLog != "" {
		evlog, err := createEventLog(spec.EventLog)
		if err != nil {
			return nil, err
		}
		rt.evlog = evlog
		// Batched, as every run's: each run flushes it before its
		// sentinel, and Close before the log closes.
		rt.w = hostrt.NewEventWriter(evlog, rt.stamp())
	}
	rt.assemble(deps)
	return rt, nil
}

// Restore is the runtime of spec after a supervisor's restart: its event
// log continued after lastSeq (the seq of its last complete line), parked
// until a run writes to it. Its record says what ran; what to do with a
// turn left open is its owner's (EndTurn, Begin with a Reattach).
func Restore(spec Spec, lastSeq int64, deps Deps) *Runtime {
	rt := newRuntime(spec)
	rt.evlog = &eventLog{path: spec.EventLog, parked: true}
	rt.w = event.NewWriter(rt.evlog, rt.stamp(), event.Options{Batched: true, StartSeq: lastSeq})
	rt.assemble(deps)
	if rt.life != nil {
		rt.life.state = Parked
	}
	return rt
}

func newRuntime(spec Spec) *Runtime {
	rt := &Runtime{spec: spec, log: spec.Options.Logger, done: make(chan struct{})}
	if rt.log == nil {
		rt.log = hclog.NewNullLogger()
	}
	return rt
}

// stamp is what every event of a stable runtime carries.
func (rt *Runtime) stamp() event.Stamp {
	o := rt.spec.Options
	return event.Stamp{RunID: o.RunID, RunLabel: o.Label, RuntimeID: rt.spec.RuntimeID, Now: o.Now}
}

// assemble makes the broker and, for the run of `avenor run` (no
// EventLog), the run itself.
func (rt *Runtime) assemble(deps Deps) {
	spec := rt.spec
	perms := spec.Permissions
	if deps.Owner != nil {
		rt.life = newLife(deps, Running)
		rt.debug = httpdebug.NewTableTarget(rt, rt.Pending)
	}
	// The broker cancels the run on a "cancelled" answer and names the
	// current session in its .req files; both come from the run in flight
	// unless the owner says otherwise.
	if perms.CancelRun == nil {
		perms.CancelRun = rt.Cancel
	}
	if perms.SessionID == nil {
		perms.SessionID = rt.Session
	}
	rt.broker = permission.New(perms)
	if deps.Control != nil {
		rt.broker.SetControl(deps.Control)
	}
	if spec.EventLog != "" {
		return
	}
	opts := spec.Options
	// The runner's facts reach the runtime typed (rt.Ended), whoever else
	// observes them.
	opts.Observer = observers{rt, opts.Observer}
	if ph := spec.Phased; ph != nil {
		rt.w = hostrt.NewEventWriter(opts.Events, event.Stamp{RunID: opts.RunID, RunLabel: opts.Label})
		base := opts
		base.Events = nil
		run := rt.BeginPhased(PhasedRun{Base: base, Initial: opts.Prompt, Backend: ph.Backend, CancelRun: rt.cancelRun})
		rt.runFn = func(ctx context.Context) Result {
			res := run(ctx)
			return Result{ExitCode: res.ExitCode, StopReason: res.StopReason, SessionID: res.SessionID, SentinelErr: res.SentinelErr}
		}
		return
	}
	opts.Launch = rt.tracked(opts.Launch)
	rt.armWatchdog(&opts)
	rt.armRecover(&opts)
	runner := hostrt.New(opts, hostrt.BrokerPermissions(rt.broker))
	rt.w, rt.cur = runner.Events(), runner
	run := rt.restartable(runner.Run)
	rt.runFn = func(ctx context.Context) Result {
		res := run(ctx)
		return Result{ExitCode: res.ExitCode, StopReason: res.StopReason, SessionID: res.SessionID, SentinelErr: res.SentinelErr}
	}
}

// SetControl routes the broker's permission requests to a control plane
// (docs/permission-handler.md#precedence); call it before a run starts.
func (rt *Runtime) SetControl(c permission.ControlResolver) { rt.broker.SetControl(c) }

// Start runs the run of `avenor run` in the background; ctx cancelled with
// hostrt.ErrInterrupted as its cause ends it as cancelled. Only the first
// call starts it.
func (rt *Runtime) Start(ctx context.Context) {
	rt.startOnce.Do(func() {
		ctx, cancel := context.WithCancelCause(ctx)
		rt.mu.Lock()
		rt.cancel = cancel
		rt.mu.Unlock()
		go func() {
			defer close(rt.done)
			defer cancel(nil)
			rt.res = rt.runFn(ctx)
		}()
	})
}

// Wait waits for the run Start started to end and returns how it ended.
func (rt *Runtime) Wait() Result {
	<-rt.done
	return rt.res
}

// cancelRun ends the run Start started cancelled (a phased run's control
// cancel).
func (rt *Runtime) cancelRun() {
	rt.mu.Lock()
	cancel := rt.cancel
	rt.mu.Unlock()
	if cancel != nil {
		cancel(hostrt.ErrInterrupted)
	}
}

// Turn is one run of a stable runtime: a prompt, continuing a session.
type Turn struct {
	Prompt, Resume string
	// Images go with the prompt (a spawn's images), checked.
	Images []sdk.Image
	// Held is the session an earlier run kept (hostrt.Options.Held).
	Held *hostrt.HeldSession
	// Adopt, when set, makes the run take the turn in flight in a plugin
	// that outlived the supervisor before this one over, rather than
	// prompt (after a restart).
	Adopt *Adopt
}

// Adopt is a recovered runtime's turn, going on in the plugin that kept
// it.
type Adopt struct {
	// Plugin is that plugin, re-attached; the run's first attempt uses it.
	Plugin *plugins.Launched
	// Reattach takes its session over.
	Reattach func(ctx context.Context, l *plugins.Launched, h sdk.Host) (sdk.Session, plugin.Reattached, error)
	// Events are the turn's events the log has (its final output).
	Events []event.Event
}

// Begin makes t the runtime's current run, a runner over the runtime's
// writer with Spec.Options, and returns the function that runs it to its
// end. Call it with the run's slot taken; the log stays open until Park.
func (rt *Runtime) Begin(t Turn) func(context.Context) hostrt.Result {
	o := rt.spec.Options
	o.Writer, o.Events = rt.w, nil
	o.Prompt, o.Resume, o.Held, o.Images = t.Prompt, t.Resume, t.Held, t.Images
	o.Observer = observers{rt, o.Observer}
	if rt.life != nil {
		// The permissions of the turn go into the runtime's record; the
		// run keeps its session for a follow-up.
		o.OnEvent, o.OnEventTypes, o.KeepSession = rt.recordPermission, permissionTypes, true
	}
	if a := t.Adopt; a != nil {
		// The turn goes on in the plugin that kept it; a retry would have
		// no prompt to send again.
		launch, first := o.Launch, true
		o.Launch = func(ctx context.Context) (*plugins.Launched, error) {
			if first {
				first = false
				return a.Plugin, nil
			}
			return launch(ctx)
		}
		o.MaxRetries, o.Reattach, o.AdoptTurn, o.AdoptedEvents = 0, a.Reattach, true, a.Events
	}
	o.Launch = rt.tracked(o.Launch)
	rt.armWatchdog(&o)
	rt.armRecover(&o)
	var restored *RateLimitRecord
	if rt.life != nil && t.Adopt != nil {
		restored = rt.life.rateWait // life.mu is held (goTurnLocked)
	}
	rt.armRateLimit(&o, restored)
	runner := hostrt.New(o, hostrt.BrokerPermissions(rt.broker))
	rt.begin(runner)
	if t.Held != nil {
		rt.track(t.Held.Plugin())
	}
	return rt.restartable(runner.Run)
}

// PhasedRun is a phased run of a runtime: its phases' common options and
// the hooks of their owner.
type PhasedRun struct {
	// Base holds every phase's options (loop.Runtimes.Base); the runtime
	// sets its writer.
	Base hostrt.Options
	// Initial is the initial prompt ("" for none).
	Initial string
	// Backend resolves a phase's backend.
	Backend func(name string) (hostrt.Backend, error)
	// Admit, when set, wraps every phase (stable: an executing slot each).
	Admit func(loop.PhaseFunc) loop.PhaseFunc
	// CancelRun cancels the whole run (the control plane's cancel).
	CancelRun func()
}

// BeginPhased makes the runtime's phased run (Spec.Phased) its current run
// and returns the function that runs it to its end; it writes the run's one
// sentinel (Options.SentinelPath).
func (rt *Runtime) BeginPhased(p PhasedRun) func(context.Context) loop.Result {
	ph, o := rt.spec.Phased, rt.spec.Options
	base := p.Base
	base.Writer = rt.w
	backend := func(name string) (hostrt.Backend, error) {
		b, err := p.Backend(name)
		b.Launch = rt.tracked(b.Launch)
		return b, err
	}
	rts := &loop.Runtimes{
		Base: base, Backend: backend, Permissions: hostrt.BrokerPermissions(rt.broker),
		SerialPermissions: rt.spec.Permissions.FileBase != "", CancelRun: p.CancelRun,
		Launch: rt.phaseLauncher,
	}
	phases := loop.PhaseFunc(rts.Run)
	if p.Admit != nil {
		phases = p.Admit(phases)
	}
	lopts := loop.Options{
		RunID: o.RunID, Dir: o.Dir, Writer: rt.w, SentinelPath: o.SentinelPath, Timeout: o.Timeout,
		Initial: p.Initial, Identity: ph.Identity, Phases: phases, Stderr: o.Stderr,
	}
	rt.begin(rts)
	return func(ctx context.Context) loop.Result { return ph.Run(ctx, lopts) }
}

func (rt *Runtime) begin(r runRef) {
	rt.mu.Lock()
	rt.cur, rt.plugins = r, nil
	rt.mu.Unlock()
	if rt.evlog != nil {
		rt.evlog.unpark()
	}
}

// tracked is launch remembering each plugin it starts for Kill.
func (rt *Runtime) tracked(launch func(context.Context) (*plugins.Launched, error)) func(context.Context) (*plugins.Launched, error) {
	if launch == nil {
		return nil
	}
	return func(ctx context.Context) (*plugins.Launched, error) {
		l, err := launch(ctx)
		if err == nil {
			rt.track(l)
			rt.remember(l)
		}
		return l, err
	}
}

// track remembers a plugin of the current run; those that have exited are
// forgotten.
func (rt *Runtime) track(l *plugins.Launched) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	live := rt.plugins[:0]
	for _, p := range rt.plugins {
		if !exited(p) {
			live = append(live, p)
		}
	}
	rt.plugins = append(live, l)
}

func exited(l *plugins.Launched) bool {
	select {
	case <-l.Client.Exited():
		return true
	default:
		return false
	}
}

// Kill SIGKILLs the plugins of the current run still running (a phased
// run's: every phase's); the run then ends at once and its runtime's
// process group is killed.
func (rt *Runtime) Kill() {
	rt.stopRestarting()
	rt.mu.Lock()
	list := append([]*plugins.Launched(nil), rt.plugins...)
	rt.mu.Unlock()
	for _, l := range list {
		if exited(l) {
			continue
		}
		if pid := l.Client.PID(); pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		} else {
			l.Client.Kill()
		}
	}
}

// Park ends a stable runtime's run: its log file closes until the next
// write, and its history keeps only what the control views show of the
// run's answers (the log has them whole).
func (rt *Runtime) Park() error {
	var err error
	if rt.evlog != nil {
		err = rt.evlog.park()
	}
	rt.w.BoundFinalOutput(MaxKeptFinalOutput)
	return err
}

// EndTurn ends a recovered runtime's open turn in its log for a supervisor
// that died: an avenor.error (source supervisor) saying msg and a
// session.end with stop reason error, both of sessionID, flushed.
func (rt *Runtime) EndTurn(sessionID, msg string) error {
	end := event.Event{"event": string(event.TypeSessionEnd), "stop_reason": string(sdk.StopError)}
	for _, ev := range []event.Event{{"event": string(event.TypeError), "source": "supervisor", "message": msg}, end} {
		if sessionID != "" {
			ev[event.KeySessionID] = sessionID
		}
		stamped, err := rt.w.Write(ev)
		if err == nil && ev.Type() == event.TypeSessionEnd {
			rt.keepEnd(stamped)
		}
	}
	if err := rt.w.Flush(); err != nil {
		return fmt.Errorf("continuing the event log %s: %w", rt.spec.EventLog, err)
	}
	return nil
}

// Close closes the event writer (flushing the log) and the log file; call
// it once nothing runs or serves the runtime any more.
func (rt *Runtime) Close() error {
	if rt.debug != nil {
		rt.debug.End()
	}
	err := rt.w.Close()
	rt.spec.Options.Spend.Close()
	if rt.evlog != nil {
		if cerr := rt.evlog.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Broker is the runtime's permission broker (a recovered turn's recorded
// decisions are answered again through it).
func (rt *Runtime) Broker() *permission.Broker { return rt.broker }

// ID implements control.Target: the stable runtime id, "" for the run of
// `avenor run` (history echoes the runtime_id param as given).
func (rt *Runtime) ID() string { return rt.spec.RuntimeID }

// Snapshot is the current (or last) run's status snapshot
// (docs/control-protocol.md#status); the zero one before the first run.
func (rt *Runtime) Snapshot() control.Status {
	rt.mu.Lock()
	r := rt.cur
	rt.mu.Unlock()
	if r == nil {
		return control.Status{}
	}
	return r.Status()
}

// Status implements control.Target: the snapshot; a supervised runtime's
// is its entry (Entry, with its owner's fields).
func (rt *Runtime) Status() any {
	if rt.life != nil {
		return rt.described()
	}
	return rt.Snapshot()
}

// Events implements control.Target.
func (rt *Runtime) Events() *event.Writer { return rt.w }

// Cancel implements control.Target: the current run ends as on SIGINT,
// stop reason cancelled, exit 130 (a parked runtime's has ended).
func (rt *Runtime) Cancel() {
	if rt.life != nil {
		rt.cancelRunning()
		return
	}
	rt.mu.Lock()
	r := rt.cur
	rt.mu.Unlock()
	if r != nil {
		r.Cancel()
	}
	rt.stopRestartable()
}

// errNoRun: the runtime has not started a run.
var errNoRun = errors.New("the runtime has not started a run")

// Prompt implements control.Target: text queued in the current run, or
// interrupting its turn; a supervised runtime's follows up (FollowUp).
func (rt *Runtime) Prompt(ctx context.Context, text string, interrupt, keepQueue bool) error {
	if rt.life != nil {
		return rt.FollowUp(ctx, text, interrupt, keepQueue)
	}
	return rt.promptRun(text, interrupt, keepQueue)
}

// AnswerPermission implements control.Target through the broker.
func (rt *Runtime) AnswerPermission(requestID, optionID, message string) error {
	return control.BrokerAnswerer{Broker: rt.broker}.Answer(requestID, optionID, message)
}

// AnswerPermissionAs implements control.SourcedTarget.
func (rt *Runtime) AnswerPermissionAs(source, requestID, optionID, message string) error {
	return control.BrokerAnswerer{Broker: rt.broker}.AnswerAs(source, requestID, optionID, message)
}

// AnswerQuestion implements control.QuestionTarget through the broker.
func (rt *Runtime) AnswerQuestion(source, requestID string, answers [][]string) error {
	return rt.broker.AnswerQuestion(requestID, answers, source)
}

// Pending reports whether a permission request waits for an answer.
func (rt *Runtime) Pending() bool { return control.BrokerAnswerer{Broker: rt.broker}.Pending() }

// Result implements control.Target: the final_output of the latest
// session.end, lossless however long ago it was written (a supervised
// runtime's with its session, status, exit code and stop reason).
func (rt *Runtime) Result() any {
	if rt.life != nil {
		return rt.supervisedResult()
	}
	// The fact arrives right after the event is published: a reader that
	// saw the session.end and asks at once finds it in the history.
	h := rt.w.History(0, 0)
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Type() == event.TypeSessionEnd {
			seq, _ := control.SeqOf(h[i])
			final, _ := h[i]["final_output"].(string)
			rt.noteEnd(hostrt.SessionEnd{Seq: seq, FinalOutput: final})
			break
		}
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return map[string]any{"final_output": rt.end.FinalOutput}
}

// noteEnd keeps e when it is the latest session.end (parallel phases end
// in any order).
func (rt *Runtime) noteEnd(e hostrt.SessionEnd) {
	rt.mu.Lock()
	if e.Seq > rt.end.Seq {
		rt.end = hostrt.SessionEnd{SessionID: e.SessionID, Seq: e.Seq, StopReason: e.StopReason, FinalOutput: e.FinalOutput}
	}
	rt.mu.Unlock()
}

// keepEnd keeps a written session.end for the control views, bounded.
func (rt *Runtime) keepEnd(ev event.Event) {
	end, cut := boundedEnd(ev)
	rt.mu.Lock()
	rt.lastEnd, rt.lastEndCut = end, cut
	rt.mu.Unlock()
}

// observers is the runtime's own observer, then its spec's (its owner's).
type observers struct {
	rt   *Runtime
	next hostrt.Observer
}

func (o observers) Opened(sessionID string) {
	if o.rt.life != nil {
		o.rt.opened(sessionID)
	}
	if o.next != nil {
		o.next.Opened(sessionID)
	}
}

func (o observers) Started(sessionID string) {
	if o.rt.life != nil {
		o.rt.started(sessionID)
	}
	if o.next != nil {
		o.next.Started(sessionID)
	}
}

func (o observers) Ended(e hostrt.SessionEnd) {
	o.rt.noteEnd(e)
	o.rt.keepEnd(e.Event)
	if o.rt.life != nil {
		o.rt.ended(e)
	}
	if o.next != nil {
		o.next.Ended(e)
	}
}
