package stable

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/control/httpdebug"
	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/plugins"
	hostrun "github.com/avenor-go/avenor/host/run"
	hostrt "github.com/avenor-go/avenor/host/runner"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Runtime states.
type rtState int

const (
	stateRunning rtState = iota // a run executes (from spawn or follow-up)
	stateParked                 // the run ended; follow-ups continue it
	stateGone                   // reaped or the supervisor stopped
)

// spec is what a runtime was spawned with, resolved: what its host/run
// runtime runs (every run's options, its broker's, its id and event log;
// runSpec adds the runtime's own hooks), and what only the supervisor
// reads.
type spec struct {
	hostrun.Spec
	agentProfile, parentID, parentRunID string
	// launch is the backend's; the runs launch through runtime.launch,
	// which remembers the plugin.
	launch func(context.Context) (*plugins.Launched, error)
}

// runtime is one runtime of the supervisor: its stream, broker, the current
// or last run and, while parked, the plugin it may keep.
type runtime struct {
	s      *Supervisor
	id     string
	n      int
	spec   spec
	params SpawnParams // as spawned, for the state file
	// run is the runtime itself: its event log and writer, its broker,
	// its runs and their status and last session.end.
	run     *hostrun.Runtime
	started int64
	// debug is the runtime's --http-debug target; closeStream ends its
	// streams.
	debug *httpdebug.TableTarget
	// ownSlotBusy: a phase of the phased run runs in the runtime's own
	// executing slot; phaseSlots counts the extra slots its phases took
	// (their names). Both under s.mu.
	ownSlotBusy bool
	phaseSlots  int

	// ready is closed at the first session.start or the end of the first
	// run: spawn answers with the session id then.
	ready     chan struct{}
	readyOnce sync.Once

	mu        sync.Mutex
	state     rtState
	cancelRun context.CancelCauseFunc
	runDone   chan struct{} // closed when the current run has parked
	runs      int
	launched  *plugins.Launched // the current (or kept) plugin
	plugin    string
	scope     string // the backend's resume scope
	held      *hostrt.HeldSession
	heldStop  chan struct{}
	sessionID string
	result    *hostrt.Result
	parkedAt  int64
	parkGen   int
	parkTimer *time.Timer
	handedTo  string // a spawn took over the parked session
	lost      string // why the session cannot be continued
	// dead: recovered after the supervisor died, and cannot continue
	// (why); perms are its turn's permission requests (state.json).
	dead      string
	plan      *hostrun.Adopt // the next run takes its turn over (recover.go)
	perms     map[string]*permissionState
	permOrder []string
	// acceptedAt is the log's last seq when a follow-up prompt was
	// accepted, until its run has ended (0: none). With it in state.json a
	// successor can tell a prompt that was accepted and whose run left
	// nothing in the log from a turn that ended: the log's lines are
	// durable where the writer's seq may not be yet.
	acceptedAt int64
	// accepting is closed once a follow-up prompt accepted while parked
	// has been made durable (or refused); nil otherwise.
	accepting chan struct{}
}

// launch is the runtime's Launch: the backend's, remembering the plugin.
func (rt *runtime) launch(ctx context.Context) (*plugins.Launched, error) {
	l, err := rt.spec.launch(ctx)
	if err != nil {
		return nil, err
	}
	rt.mu.Lock()
	rt.launched = l
	rt.plugin = l.Client.Info().Name
	rt.scope = l.Backend.Info().ResumeScope
	rt.mu.Unlock()
	rt.s.dirty() // its reattach config
	return l, nil
}

// runFacts is the runtime as its runs' observer (hostrt.Observer): the
// typed facts of its sessions, never read back out of the event stream.
type runFacts struct{ rt *runtime }

// Opened makes the runtime's plugin and session durable before its prompt
// goes out: a supervisor killed during the turn leaves its successor what
// it needs to take the turn over.
func (f runFacts) Opened(sessionID string) {
	rt := f.rt
	if sessionID != "" {
		rt.mu.Lock()
		rt.sessionID = sessionID
		rt.mu.Unlock()
	}
	// The runtime itself was made durable at its spawn: a write that
	// fails now leaves a successor a runtime to end, and is logged.
	_ = rt.s.saveSync()
}

// Started: the session's session.start is written; spawn answers now.
func (f runFacts) Started(sessionID string) {
	rt := f.rt
	if sessionID != "" {
		rt.mu.Lock()
		rt.sessionID = sessionID
		rt.mu.Unlock()
	}
	rt.markReady()
	rt.s.dirty()
}

// Ended: the turn is over (the runtime keeps its session.end for the
// control views): every decision of it reached the runtime (or is moot),
// and nothing of it is pending any more.
func (f runFacts) Ended(e hostrt.SessionEnd) {
	rt := f.rt
	rt.mu.Lock()
	rt.perms, rt.permOrder = nil, nil
	if e.SessionID != "" {
		rt.sessionID = e.SessionID
	}
	rt.mu.Unlock()
	rt.markReady()
	rt.s.dirty()
}

// persistTypes are the events persistEvent keeps in state.json; the
// others (the chunks, most of a stream) are not decoded for it.
var persistTypes = map[sdk.EventType]bool{event.TypePermissionRequest: true, event.TypePermissionResponse: true}

func (rt *runtime) markReady() { rt.readyOnce.Do(func() { close(rt.ready) }) }

// startRunLocked starts a run of text; the executing slot is taken and
// s.mu and rt.mu are held.
func (rt *runtime) startRunLocked(text, resume string, held *hostrt.HeldSession) {
	s := rt.s
	ctx, cancel := context.WithCancelCause(s.runCtx)
	turn := hostrun.Turn{Prompt: text, Resume: resume, Held: held, Adopt: rt.plan}
	if p := rt.plan; p != nil {
		rt.plan = nil
		rt.launched = p.Plugin
	}
	run := rt.run.Begin(turn)
	if held != nil {
		rt.launched = held.Plugin()
	}
	rt.goLocked(cancel, func() hostrt.Result { return run(ctx) })
}

// goLocked runs run, the runtime's run begun with its context's cancel,
// and parks the runtime after it; s.mu and rt.mu are held.
func (rt *runtime) goLocked(cancel context.CancelCauseFunc, run func() hostrt.Result) {
	s := rt.s
	done := make(chan struct{})
	rt.cancelRun, rt.runDone, rt.state = cancel, done, stateRunning
	rt.runs++
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		res := run()
		cancel(nil)
		rt.finishRun(res, done)
	}()
}

// finishRun parks the runtime after a run (or retires it while the
// supervisor stops).
func (rt *runtime) finishRun(res hostrt.Result, done chan struct{}) {
	s := rt.s
	var toClose []*hostrt.HeldSession
	s.mu.Lock()
	rt.mu.Lock()
	rt.result = &res
	rt.acceptedAt = 0 // the run flushed its log and wrote its sentinel
	if res.SessionID != "" {
		rt.sessionID = res.SessionID
	}
	rt.state = stateParked
	rt.parkedAt = s.cfg.Now().UnixMilli()
	rt.launched = nil
	held := res.Held
	var evict []*runtime
	switch {
	case held == nil:
	case s.closing || rt.endedLocked() != "":
		// An ended runtime takes no follow-up (docs/stable.md#runtimes): nothing is
		// left for its plugin to keep.
		toClose = append(toClose, held)
	default:
		rt.held, rt.launched = held, held.Plugin()
		rt.watchHeldLocked(held)
		evict = s.keepLocked(rt, rt.scope)
	}
	rt.armParkTimerLocked()
	rt.mu.Unlock()
	s.releaseLocked(rt.id)
	for _, v := range evict {
		if h := v.evictHeld(s.cfg.MaxKeptPlugins); h != nil {
			toClose = append(toClose, h)
		}
	}
	s.mu.Unlock()
	// The run's answers are in the log; its history keeps what the control
	// views show of them.
	if err := rt.run.Park(); err != nil {
		s.log.Warn("closing the event log of a parked runtime", "runtime_id", rt.id, "error", err)
	}
	close(done)
	rt.markReady()
	s.dirty()
	for _, h := range toClose {
		h.Close()
	}
}

// armParkTimerLocked reaps the parked runtime after ParkedTimeout; s.mu
// and rt.mu are held.
func (rt *runtime) armParkTimerLocked() {
	s := rt.s
	if s.closing || s.cfg.ParkedTimeout <= 0 {
		return
	}
	rt.parkGen++
	gen := rt.parkGen
	rt.parkTimer = time.AfterFunc(s.cfg.ParkedTimeout, func() { rt.reap(gen) })
}

// watchHeldLocked watches a kept plugin: if it dies while parked, its
// runtime's process group is killed at once and the runtime learns it.
func (rt *runtime) watchHeldLocked(h *hostrt.HeldSession) {
	stop := make(chan struct{})
	rt.heldStop = stop
	rt.s.bg.Add(1)
	go func() {
		defer rt.s.bg.Done()
		select {
		case <-h.Exited():
		case <-stop:
			return
		}
		s := rt.s
		s.mu.Lock()
		rt.mu.Lock()
		mine := rt.held == h
		if mine {
			rt.held, rt.heldStop, rt.launched = nil, nil, nil
			if rt.scope == sdk.ResumeInProcess {
				rt.lost = fmt.Sprintf("its plugin %s exited while the runtime was parked", rt.plugin)
			}
		}
		rt.mu.Unlock()
		if mine {
			s.unkeepLocked(rt)
		}
		s.mu.Unlock()
		if mine {
			s.log.Warn("the plugin of a parked runtime exited", "runtime_id", rt.id, "plugin", rt.plugin)
			h.Close()
		}
	}()
}

// evictHeld takes the kept plugin away from a parked runtime to make room
// for a newer one (the caller closes it); an in_process session is lost
// with it, and its follow-ups say why.
func (rt *runtime) evictHeld(maxKept int) *hostrt.HeldSession {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	h := rt.takeHeldLocked()
	if h != nil && rt.scope == sdk.ResumeInProcess {
		rt.lost = fmt.Sprintf("its plugin %s was stopped while the runtime was parked, to keep at most %d parked runtimes' plugins running (the longest parked stop first)",
			rt.plugin, maxKept)
	}
	return h
}

func (rt *runtime) takeHeldLocked() *hostrt.HeldSession {
	h := rt.held
	rt.held = nil
	if rt.heldStop != nil {
		close(rt.heldStop)
		rt.heldStop = nil
	}
	if h != nil {
		rt.launched = nil
	}
	return h
}

// reap removes a runtime parked for ParkedTimeout.
func (rt *runtime) reap(gen int) {
	s := rt.s
	s.mu.Lock()
	rt.mu.Lock()
	if rt.state != stateParked || rt.parkGen != gen || s.closing {
		rt.mu.Unlock()
		s.mu.Unlock()
		return
	}
	rt.state = stateGone
	h := rt.takeHeldLocked()
	rt.mu.Unlock()
	s.unkeepLocked(rt)
	delete(s.runtimes, rt.id)
	s.releaseMemoryLocked()
	s.mu.Unlock()
	s.log.Debug("reaped a parked runtime", "runtime_id", rt.id)
	s.dirty()
	if h != nil {
		h.Close()
	}
	rt.closeStream()
}

// retire ends the runtime at shutdown: its kept plugin stops, its stream
// closes.
func (rt *runtime) retire() {
	rt.mu.Lock()
	rt.state = stateGone
	if rt.parkTimer != nil {
		rt.parkTimer.Stop()
	}
	rt.parkGen++
	h := rt.takeHeldLocked()
	rt.mu.Unlock()
	if h != nil {
		h.Close()
	}
	rt.closeStream()
}

func (rt *runtime) closeStream() {
	if rt.debug != nil {
		rt.debug.End()
	}
	if err := rt.run.Close(); err != nil {
		rt.s.log.Warn("closing an event log", "runtime_id", rt.id, "error", err)
	}
}

// cancel stops the running run (stop reason cancelled, exit 130); a parked
// runtime has nothing to cancel.
func (rt *runtime) cancel() {
	rt.mu.Lock()
	f := rt.cancelRun
	running := rt.state == stateRunning
	rt.mu.Unlock()
	if running && f != nil {
		f(hostrt.ErrInterrupted)
	}
}

// killPlugin SIGKILLs the running run's plugin (a loop's or team's: every
// phase plugin still running); the run then ends at once and its runtime's
// process group is killed.
func (rt *runtime) killPlugin() {
	rt.mu.Lock()
	running := rt.state == stateRunning
	rt.mu.Unlock()
	if running {
		rt.run.Kill()
	}
}

// followUp runs text in the runtime: queued (or, with interrupt, pre-empting)
// in the running run, or as a new run that continues a parked runtime's
// session.
func (rt *runtime) followUp(ctx context.Context, text string, interrupt, keepQueue bool) error {
	if text == "" {
		return stopErr(hostrt.ErrEmptyPrompt)
	}
	if err := sdk.CheckPrompt("text", text); err != nil {
		return control.InvalidParams(err.Error())
	}
	s := rt.s
	for {
		s.mu.Lock()
		if s.stoppingLocked() {
			// A prompt queued in a run the shutdown is about to cancel
			// would be answered accepted and never run.
			s.mu.Unlock()
			return ErrShuttingDown
		}
		rt.mu.Lock()
		switch rt.state {
		case stateGone:
			rt.mu.Unlock()
			s.mu.Unlock()
			return unknownRuntime(rt.id)
		case stateRunning:
			started, done := rt.runs > 0, rt.runDone
			rt.mu.Unlock()
			s.mu.Unlock()
			if !started {
				// Between its spawn's durable record and its first run.
				return fmt.Errorf("runtime %s is starting; prompt it once its spawn has answered", rt.id)
			}
			err := rt.run.Prompt(ctx, text, interrupt, keepQueue)
			// A cancelled run that is still ending its turn (ErrStopping)
			// is an ending run: once it has ended, the prompt continues the
			// session as a prompt that just missed the end does, or is
			// refused with the runtime that the cancel ended.
			stopping := errors.Is(err, hostrt.ErrStopping)
			if !errors.Is(err, hostrt.ErrRunEnded) && !stopping {
				return stopErr(err)
			}
			if rt.spec.Phased != nil && stopping {
				return fmt.Errorf("runtime %s: %w", rt.id, err)
			}
			if rt.spec.Phased != nil {
				// Between two phases: the loop goes on, nothing takes a prompt.
				return fmt.Errorf("runtime %s: %w; prompt again once its next phase has started", rt.id, err)
			}
			select { // the run is ending: continue once it has parked
			case <-done:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if wait := rt.accepting; wait != nil {
			// Another prompt is being made durable: this one follows it.
			rt.mu.Unlock()
			s.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		err := rt.acceptLocked()
		rt.mu.Unlock()
		s.mu.Unlock()
		if err != nil {
			return err
		}
		return rt.resume(text)
	}
}

// acceptLocked takes a follow-up prompt for a parked runtime: its
// executing slot, and acceptedAt, which state.json must hold before the
// prompt runs (resume); s.mu and rt.mu are held.
func (rt *runtime) acceptLocked() error {
	s := rt.s
	if s.closing {
		return ErrShuttingDown
	}
	if held := rt.held; held != nil && !held.Alive() && rt.scope == sdk.ResumeInProcess {
		// Its watcher has not run yet; the run itself closes it.
		rt.lost = fmt.Sprintf("its plugin %s exited while the runtime was parked", rt.plugin)
	}
	if err := rt.refusalLocked(); err != nil {
		return err
	}
	if err := s.admitLocked(rt.id); err != nil {
		return err
	}
	if rt.parkTimer != nil {
		rt.parkTimer.Stop()
	}
	rt.parkGen++ // a reap already due is void
	rt.acceptedAt = rt.run.Events().LatestSeq()
	rt.accepting = make(chan struct{})
	return nil
}

// resume runs an accepted follow-up prompt once state.json says it was
// accepted: a supervisor killed before its turn starts leaves the
// successor a prompt to end, not a turn it cannot tell from the one before
// (recover.go). A state file that cannot be written (a full disk) refuses
// the prompt before anything of it runs, and the runtime stays parked.
func (rt *runtime) resume(text string) error {
	s := rt.s
	err := s.saveSync()
	s.mu.Lock()
	rt.mu.Lock()
	done := rt.accepting
	rt.accepting = nil
	defer close(done)
	if err == nil && (s.closing || rt.state != stateParked) {
		err = ErrShuttingDown // the shutdown retired it meanwhile
	}
	if err != nil {
		rt.acceptedAt = 0
		s.releaseLocked(rt.id)
		if rt.state == stateParked {
			rt.armParkTimerLocked()
		}
		rt.mu.Unlock()
		s.mu.Unlock()
		s.dirty()
		if errors.Is(err, ErrNotDurable) {
			return fmt.Errorf("prompt refused, nothing of it ran: %w", err)
		}
		return err
	}
	held := rt.takeHeldLocked()
	s.unkeepLocked(rt)
	hostrt.CleanFiles(rt.spec.Options.SentinelPath, rt.spec.Options.PermBase, s.log.Warn)
	rt.startRunLocked(text, rt.sessionID, held)
	rt.mu.Unlock()
	s.mu.Unlock()
	return nil
}

// endedLocked says why the runtime's last run ended it, "" when the run's
// turn ended well (exit code 0) and the runtime parks for follow-ups; rt.mu
// is held. docs/stable.md#runtimes: a runtime that was cancelled, whose plugin
// or CLI died, or whose turn ended in error or timed out is ended with its
// exit code and sentinel, so a harness that waits for ended never waits for
// ever.
func (rt *runtime) endedLocked() string {
	if rt.result == nil || rt.result.ExitCode == 0 {
		return ""
	}
	return fmt.Sprintf("its turn ended with stop reason %s (exit code %d)", rt.result.StopReason, rt.result.ExitCode)
}

// refusalLocked says why a parked runtime can take no follow-up prompt,
// nil when it can; rt.mu is held. A runtime it refuses lists as ended, one
// it would take as idle (docs/control-protocol.md#spawn).
func (rt *runtime) refusalLocked() error {
	if rt.dead != "" {
		return fmt.Errorf("%w: runtime %s %s; spawn a new runtime", ErrSessionLost, rt.id, rt.dead)
	}
	if rt.spec.Phased != nil {
		return fmt.Errorf("runtime %s ran a %s (%s) that has ended; a follow-up cannot continue it: spawn a new runtime", rt.id, rt.spec.Phased.Kind, rt.spec.Phased.File)
	}
	if why := rt.endedLocked(); why != "" {
		fix := "spawn a new runtime"
		if rt.sessionID != "" {
			fix += fmt.Sprintf(" (with session_id %s to continue its session)", rt.sessionID)
		}
		return fmt.Errorf("%w: runtime %s: %s; only a runtime whose turn ended well takes a follow-up: %s", ErrRuntimeEnded, rt.id, why, fix)
	}
	if rt.handedTo != "" {
		return fmt.Errorf("runtime %s's session %s continues in runtime %s; prompt %s", rt.id, rt.sessionID, rt.handedTo, rt.handedTo)
	}
	if held := rt.held; rt.scope == sdk.ResumeInProcess && rt.sessionID != "" && (held == nil || !held.Alive()) {
		why := rt.lost
		switch {
		case why != "":
		case held != nil:
			why = fmt.Sprintf("its plugin %s exited while the runtime was parked", rt.plugin)
		default:
			why = "its plugin is no longer running"
		}
		return fmt.Errorf("%w: runtime %s cannot continue session %s: %s, and backend %s resumes sessions only inside the plugin process that holds them (resume scope in_process); spawn a new runtime",
			ErrSessionLost, rt.id, rt.sessionID, why, rt.spec.Options.Backend)
	}
	return nil
}

// session returns the runtime's current session id.
// For a loop or team it is the session of the phase in flight.
func (rt *runtime) session() string {
	if rt.spec.Phased != nil {
		return rt.run.Snapshot().SessionID
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.sessionID
}

// ReapReleaseDelay is how long after reaping parked runtimes the
// supervisor hands the memory they held back to the system (one forced
// collection for a burst of reaps). Go would return it only minutes later,
// so a supervisor that had parked large answers kept its size long after
// their runtimes were gone.
const ReapReleaseDelay = 2 * time.Second

// releaseMemoryLocked schedules the one release of the memory of the
// runtimes reaped in the next ReapReleaseDelay; s.mu is held.
func (s *Supervisor) releaseMemoryLocked() {
	if s.releaseTimer != nil || s.closing {
		return
	}
	s.releaseTimer = time.AfterFunc(ReapReleaseDelay, func() {
		s.mu.Lock()
		s.releaseTimer = nil
		closing := s.closing
		s.mu.Unlock()
		if !closing {
			debug.FreeOSMemory()
		}
	})
}
