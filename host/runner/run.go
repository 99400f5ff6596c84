package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/permission"
	"github.com/avenor-go/avenor/host/plugins"
	"github.com/avenor-go/avenor/host/sentinel"
	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/plugin"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Causes a run's context may be cancelled with (context.WithCancelCause).
var (
	// ErrInterrupted: SIGINT/SIGTERM or a control cancel → "cancelled", 130.
	ErrInterrupted = errors.New("interrupted")
	// ErrTimeout: --timeout elapsed → "timeout", 124.
	ErrTimeout = errors.New("run timeout elapsed")
	// ErrEventLog: the event log failed (a write error, or a write blocked
	// past event.MaxWriteStall) → "error", 1, not retried: a log missing
	// lines cannot be made whole by another attempt.
	ErrEventLog = errors.New("event log failed")
	// ErrRestart: the run's owner restarts it (Runner.Restart) → the
	// attempt's plugin is stopped and Run returns Result.Restarted, with no
	// session.end for the stopped turn, no retry and no sentinel: the run
	// goes on in a fresh process, on the same session, for the harness.
	ErrRestart = errors.New("restarting in a fresh plugin process")
)

// attemptResult is how one attempt ended.
type attemptResult struct {
	stopReason sdk.StopReason
	sessionID  string
	// final: not worth retrying (a user error, or the run was stopped).
	final bool
	// held: the session kept open (Options.KeepSession).
	held *HeldSession
	// refused: the run's flags were refused (a thinking level the backend
	// does not take) before a session opened. The log's session.end says
	// error; the sentinel, as for every validation failure, derives its
	// stop reason from the exit code: exit_1 (docs/run.md#lifecycle).
	refused bool
}

// Runner runs one avenor runtime.
type Runner struct {
	opts        Options
	w           *event.Writer
	permissions PermissionsFunc
	status      *statusTracker
	turns       turnControl
	// turnPrefix makes this runner's turn ids (the wire's, not the log's
	// "turn" numbers) its own: a plugin that outlived a supervisor replays
	// the end of the last turn it ran, numbered 1 like this runner's first,
	// and must never be taken for it.
	turnPrefix string

	writeMu sync.Mutex // status synthesis and the write it precedes are one step
	// shared: w is Options.Writer, so the run stamps its own session id
	// (sessionID, under writeMu) instead of setting the writer's.
	shared    bool
	sessionID string
	// retriesLeft: the attempt in flight is not the last one allowed.
	retriesLeft bool

	logReported atomic.Bool // the log's failure was told on stderr

	dog *turnDog // nil: no --watchdog

	recov *recoverBook // nil: no --sandbox-recover (sandboxrecover.go)

	// contextWarned: the context warning was given and the window has not
	// fallen below the threshold since (context.go).
	contextWarned bool

	saidMu sync.Mutex
	said   map[string]bool // backend errors already told on stderr
}

// New prepares a run; permissions may be nil (a permission broker with
// only opts.AutoApprove: no file handler, no control plane).
func New(opts Options, permissions PermissionsFunc) *Runner {
	opts.defaults()
	w := opts.Writer
	if w == nil {
		// Batched (for the event path's throughput); Run flushes it before the sentinel says the
		// run is over.
		w = NewEventWriter(opts.Events, event.Stamp{RunID: opts.RunID, RunLabel: opts.Label, Now: opts.Now})
	}
	if permissions == nil {
		permissions = BrokerPermissions(permission.New(permission.Options{AutoApprove: opts.AutoApprove}))
	}
	r := &Runner{opts: opts, w: w, permissions: permissions, shared: opts.Writer != nil,
		status:     newStatusTracker(opts.RunID, opts.Label, opts.MaxRetries, opts.Now),
		turnPrefix: newTurnPrefix(), dog: newTurnDog(opts.Watchdog, opts.ProgressTimeout),
		recov: newRecoverBook(opts.SandboxRecover, opts.Sandbox)}
	r.turns.init()
	r.turns.n = opts.TurnsBefore
	return r
}

// Events is the run's event writer (history and subscribers for the
// control plane).
func (r *Runner) Events() *event.Writer { return r.w }

// Run runs attempts until one does not need a retry, writes the sentinel
// and returns the exit code. ctx cancelled with ErrInterrupted as its cause
// ends the run as "cancelled".
func (r *Runner) Run(ctx context.Context) Result {
	o := &r.opts
	ctx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	r.turns.setRunCancel(cancelRun)
	stopWatch := r.watchLog(ctx, cancelRun)
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.Timeout, ErrTimeout)
		defer cancel()
	}
	r.turns.setRunContext(ctx)
	resume := o.Resume
	held := o.Held
	var res attemptResult
	for attempt := 1; ; attempt++ {
		r.retriesLeft = attempt <= o.MaxRetries
		res = r.attempt(ctx, resume, held)
		held = nil
		if res.sessionID != "" {
			resume = res.sessionID
		}
		exit := sentinel.ExitCode(res.stopReason)
		if restarting(ctx) || res.final || attempt > o.MaxRetries || !sentinel.Retryable(exit, res.stopReason) {
			break
		}
		if res.held != nil { // a retry starts from a fresh plugin
			res.held.Close()
			res.held = nil
		}
		r.status.update(func(s *Status) { s.RetryAttempt = attempt + 1 })
		r.emit(event.Event{"event": string(event.TypeRetry), "attempt": attempt + 1, "max_retries": o.MaxRetries})
		r.cleanFiles()
		if err := o.Sleep(ctx, o.Jitter(Backoff(attempt))); err != nil {
			// Stopped while waiting to retry: the log's last session.end
			// must say so, as the sentinel will.
			res.stopReason = stopReasonOf(ctx)
			r.status.update(func(s *Status) { s.Phase = PhaseIdle })
			if !restarting(ctx) {
				r.emit(event.Event{"event": string(event.TypeSessionEnd), "stop_reason": string(res.stopReason), "session_id": res.sessionID})
			}
			break
		}
	}
	stopWatch()
	result := Result{ExitCode: sentinel.ExitCode(res.stopReason), StopReason: res.stopReason, SessionID: res.sessionID, Held: res.held}
	// Restarted only when ErrRestart stopped the run: a timeout or cancel
	// that came first ends it as usual.
	restart, queued := r.turns.finish()
	restart = restart && restarting(ctx)
	r.status.update(func(s *Status) { s.Phase, s.TurnState = PhaseEnded, TurnEnded })
	// The sentinel tells a harness the log is complete: every line must be
	// in it first, on a shared writer too (a stable runtime's is batched).
	// Flush returns within the stall bound even when a write never does;
	// a shared writer belongs to its owner, but a failed one fails this
	// run too.
	logErr := r.w.Flush()
	if logErr != nil {
		// However the run went, its log is incomplete: the sentinel must
		// not say DONE over it.
		r.reportLog(logErr)
		result.ExitCode, result.StopReason = sentinel.ExitFailure, sdk.StopError
	}
	if restart && logErr == nil {
		// The run goes on in a fresh process (ErrRestart): the harness
		// sees no end yet. A log that failed ends it after all, as above.
		result.Restarted, result.Queued = true, queued
		return result
	}
	rec := sentinel.Record{ExitCode: result.ExitCode, SessionID: result.SessionID, StopReason: result.StopReason, RunID: o.RunID}
	if res.refused {
		rec.StopReason = sentinel.DefaultStopReason(result.ExitCode)
	}
	result.SentinelErr = r.writeSentinel(rec)
	return result
}

// watchLog ends the run with ErrEventLog as soon as its event log fails,
// after an avenor.error for history and subscribers (the log itself takes
// no more lines). The returned stop waits for the watcher to end.
func (r *Runner) watchLog(ctx context.Context, cancelRun context.CancelCauseFunc) (stop func()) {
	done := make(chan struct{})
	stopAfter := r.w.AfterFailed(func() {
		defer close(done)
		if ctx.Err() != nil {
			return
		}
		msg := r.reportLog(r.w.Err())
		r.emit(event.Event{"event": string(event.TypeError), "source": SourceEventLog, "message": msg})
		cancelRun(ErrEventLog)
	})
	// Once stop returns, the report is written or will never be.
	return func() {
		if !stopAfter() {
			<-done
		}
	}
}

// SourceEventLog is the avenor.error source of a failed event log.
const SourceEventLog = "event_log"

// reportLog tells the user once, on stderr, that the event log failed, and
// returns the message. A run on a shared writer leaves stderr to the
// writer's owner (a loop tells it once for all its phases) and logs it.
func (r *Runner) reportLog(err error) string {
	msg := fmt.Sprintf("the event log is incomplete, the run is ended: %v", err)
	if r.logReported.Swap(true) {
		return msg
	}
	if r.shared {
		r.opts.Logger.Error("the event log failed; the run is ended", "error", err)
	} else {
		fmt.Fprintf(r.opts.Stderr, "avenor: %s\n", msg)
	}
	return msg
}

// CleanFiles removes the sentinel and permission files of an earlier run;
// the caller runs it before the first attempt, Run before each retry.
func (r *Runner) cleanFiles() { CleanFiles(r.opts.SentinelPath, r.opts.PermBase, r.opts.Logger.Warn) }

// CleanFiles removes a sentinel and its permission files, logging failures
// other than "does not exist".
func CleanFiles(sentinelPath, permBase string, warn func(string, ...any)) {
	var paths []string
	if sentinelPath != "" {
		paths = append(paths, sentinelPath)
	}
	if permBase != "" {
		paths = append(paths, permBase+".req", permBase+".req.response")
	}
	for _, p := range paths {
		if err := sentinel.Remove(p); err != nil {
			warn("could not remove a stale file", "path", p, "error", err)
		}
	}
}

// writeSentinel writes the run's sentinel, if it has one, and returns (after
// telling stderr) why it could not.
func (r *Runner) writeSentinel(rec sentinel.Record) error {
	if r.opts.SentinelPath == "" {
		return nil
	}
	err := sentinel.Write(r.opts.SentinelPath, rec)
	if err != nil {
		fmt.Fprintf(r.opts.Stderr, "avenor: writing sentinel: %v\n", err)
	}
	return err
}

// emit writes an event, preceded by the agent.status events it triggers.
func (r *Runner) emit(ev event.Event) { r.write(ev, false) }

// write stamps and writes ev (after its synthesised statuses) and returns
// the stamped event. owned: ev is handed over and may be stamped in place
// (event.Writer.WriteOwned); else the writer stamps a copy.
func (r *Runner) write(ev event.Event, owned bool) event.Event {
	if r.dropped(ev.Type()) {
		return ev
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	for _, st := range r.status.before(ev) {
		r.writeOne(st, true) // built for this write alone
	}
	return r.writeOne(ev, owned)
}

func (r *Runner) writeOne(ev event.Event, owned bool) event.Event {
	if r.shared && r.sessionID != "" {
		if sid, _ := ev[event.KeySessionID].(string); sid == "" {
			if !owned {
				own := make(event.Event, len(ev)+1)
				for k, v := range ev {
					own[k] = v
				}
				ev, owned = own, true
			}
			ev[event.KeySessionID] = r.sessionID
		}
	}
	var stamped event.Event
	var err error
	if owned {
		stamped, err = r.w.WriteOwned(ev)
	} else {
		stamped, err = r.w.Write(ev)
	}
	if err != nil && stamped == nil {
		r.opts.Logger.Error("writing an event failed", "error", err)
		return ev
	}
	// A log failure (err with the event published) is the watcher's to
	// report; the event still reaches history and subscribers.
	r.status.after(stamped)
	r.observeEvent(stamped)
	r.noteDenied(stamped)
	if r.wantsOnEvent(stamped.Type()) {
		r.opts.OnEvent(stamped)
	}
	r.noteEnd(stamped.Type(), func() event.Event { return stamped })
	return stamped
}

// wantsOnEvent: Options.OnEvent is set and takes events of type typ.
func (r *Runner) wantsOnEvent(typ sdk.EventType) bool {
	return r.opts.OnEvent != nil && (r.opts.OnEventTypes == nil || r.opts.OnEventTypes[typ])
}

// writeFields is write for a plugin event that arrived as JSON and was
// scanned (sessionHost.EmitJSON): the same statuses first, the same
// stamping, the same line — spliced, not decoded and encoded again.
func (r *Runner) writeFields(f *event.Fields) {
	if r.dropped(f.Type()) {
		return
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	for _, st := range r.status.beforeFields(f) {
		r.writeOne(st, true)
	}
	shared := ""
	if r.shared {
		shared = r.sessionID
	}
	stamped, err := r.w.WriteFields(f, shared)
	if err != nil && stamped.Seq == 0 {
		r.opts.Logger.Error("writing an event failed", "error", err)
		return
	}
	r.status.afterFields(f, stamped)
	r.observeFields(f)
	if r.wantsOnEvent(f.Type()) {
		r.opts.OnEvent(stamped.Event())
	}
	r.noteEnd(f.Type(), stamped.Event)
}

// setSessionID makes id the session_id of the events that carry none.
func (r *Runner) setSessionID(id string) {
	if !r.shared {
		r.w.SetSessionID(id)
		return
	}
	r.writeMu.Lock()
	r.sessionID = id
	r.writeMu.Unlock()
}

// fail reports an error to the user and the log.
func (r *Runner) fail(h *sessionHost, source, msg string) {
	r.markSaid(msg)
	fmt.Fprintf(r.opts.Stderr, "avenor: %s\n", msg)
	ev := event.Event{"event": string(event.TypeError), "source": source, "message": msg}
	if h != nil {
		h.emit(ev)
		// A sandbox that could not be set up is a denial too.
		h.emitDenied(h.deniedOf().fromError(msg))
		return
	}
	r.emit(ev)
}

// sayBackendError tells the user on stderr, once per message, a failure the
// backend reported only in the stream: an avenor.error event of its own
// (codex's error notification) or a failed turn's error field. Without it
// such failures — a missing API key, a runtime that is not logged in —
// reached only the event log; the plugin's message names the fix.
func (r *Runner) sayBackendError(msg string) {
	msg = strings.TrimSpace(msg)
	if msg == "" || !r.markSaid(msg) {
		return
	}
	fmt.Fprintf(r.opts.Stderr, "avenor: backend %s: %s\n", r.opts.Backend, msg)
}

// markSaid records msg as told on stderr; false when it already was.
func (r *Runner) markSaid(msg string) bool {
	r.saidMu.Lock()
	defer r.saidMu.Unlock()
	if r.said[msg] {
		return false
	}
	if r.said == nil {
		r.said = map[string]bool{}
	}
	r.said[msg] = true
	return true
}

// stopReasonOf maps a done context to its stop reason.
func stopReasonOf(ctx context.Context) sdk.StopReason {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, ErrTimeout):
		return sdk.StopTimeout
	case errors.Is(cause, ErrEventLog):
		return sdk.StopError
	}
	return sdk.StopCancelled
}

// restarting reports whether the run's context was cancelled to restart
// it (ErrRestart): the stopped turn's session goes on in a fresh process,
// so no session.end is written for it.
func restarting(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrRestart)
}

// attempt runs one plugin process through one session; held, when set and
// alive, is that process and session, kept open by an earlier run.
func (r *Runner) attempt(ctx context.Context, resume string, held *HeldSession) attemptResult {
	o := &r.opts
	// Each attempt's statuses start afresh, so its session.end gets its own done.
	r.status.update(func(s *Status) { s.Phase, s.PhaseLabel = PhaseIdle, "" })
	if held != nil && !held.Alive() {
		// The kept plugin died between runs: a fresh one resumes a
		// cross_process session; an in_process one died with it, and is
		// reported lost rather than silently replaced.
		scope := held.l.Backend.Info().ResumeScope
		held.Close()
		held = nil
		if scope == sdk.ResumeInProcess {
			r.fail(nil, "plugin", fmt.Sprintf("backend %s: session %s is lost: its plugin exited after the previous run, and the backend continues sessions only inside the plugin process that holds them (resume scope in_process); start a new session", o.Backend, resume))
			return r.endEarly(nil, sdk.StopError, resume, true)
		}
	}
	var l *plugins.Launched
	var h *sessionHost
	if held != nil {
		l, h = held.l, held.h
	} else {
		var err error
		l, err = o.Launch(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return r.endStopped(ctx, nil, resume)
			}
			var nf *plugins.NotFoundError
			r.fail(nil, "backend", err.Error())
			return r.endEarly(nil, sdk.StopError, resume, errors.As(err, &nf))
		}
		h = newSessionHost(r, o.Logger, nil)
	}
	h.setOnError(r.sayBackendError)
	h.setSandbox(o.Sandbox)
	pluginName, pluginVersion := l.Client.Info().Name, l.Client.Info().Version
	onProcess := func(p sdk.ProcessInfo) { r.status.update(func(s *Status) { s.PID = p.PID }) }
	var pgid int
	keep := false // the session outlives the attempt (Options.KeepSession)
	defer func() {
		if keep {
			return
		}
		l.Client.Kill()
		// The plugin stops its runtime; killing the group again covers a
		// plugin that died or ignored us. No process is ever orphaned.
		if p := h.process().PGID; p > 1 {
			pgid = p
		}
		if pgid > 1 {
			_ = agentproc.KillGroup(pgid)
		}
		h.stopNetProxy()
	}()

	sessID := resume
	var sess sdk.Session
	var adopted string // the turn in flight of a re-attached session
	reattach := o.Reattach
	o.Reattach = nil // the first attempt only
	if reattach != nil && held == nil {
		h.onProcess = onProcess
		h.permissions = r.permissions(resume)
		r.setSessionID(resume) // what the plugin kept is stamped with it too
		if o.AdoptTurn {
			// Before what the plugin kept arrives: the final output is
			// the whole turn's, in order.
			for _, ev := range o.AdoptedEvents {
				h.final.Observe(ev)
			}
		}
		var ra plugin.Reattached
		var err error
		sess, ra, err = reattach(ctx, l, h)
		if err != nil {
			if ctx.Err() != nil {
				return r.endStopped(ctx, h, resume)
			}
			r.fail(h, "backend", fmt.Sprintf("backend %s: taking session %s over from its plugin: %v", o.Backend, resume, err))
			return r.endEarly(h, sdk.StopError, resume, true)
		}
		sessID = sess.ID()
		r.setSessionID(sessID)
		if o.AdoptTurn {
			adopted = ra.TurnID
		}
	} else if held != nil {
		sess, sessID = held.sess, held.id
		h.rebind(r, r.permissions(sessID), onProcess)
		if p := h.process(); p.PID > 0 {
			onProcess(p)
		}
		r.setSessionID(sessID)
	} else {
		h.onProcess = onProcess
		info := l.Backend.Info()
		refusal := checkOpen(info, *o)
		if c := o.Watchdog.CheckBackend; refusal == nil && c != nil {
			refusal = c(info)
		}
		if err := refusal; err != nil {
			r.fail(nil, "validation", err.Error())
			res := r.endEarly(nil, sdk.StopError, resume, true)
			res.refused = true
			return res
		}

		h.permissions = r.permissions(sessID)
		h.setQuestions(o.Questions)
		sb, err := h.startNetProxy(o.Sandbox)
		if err != nil {
			r.fail(nil, "sandbox", err.Error())
			return r.endEarly(nil, sdk.StopError, resume, true)
		}
		sess, err = l.Backend.Open(ctx, sdk.OpenRequest{
			Backend: o.Backend, Dir: o.Dir, Model: o.Model, Agent: o.Agent, Thinking: o.Thinking,
			ResumeSessionID: resume, ServerURL: o.ServerURL, Env: o.Env, Options: o.PluginOptions,
			StateDir: o.StateDir, RunID: o.RunID, DirExplicit: o.DirExplicit,
			PermissionMode: o.PermissionMode, Launch: o.LaunchContext, Sandbox: sb, Questions: o.Questions,
		}, h)
		if err != nil {
			if ctx.Err() != nil {
				return r.endStopped(ctx, h, resume)
			}
			r.fail(h, "backend", fmt.Sprintf("backend %s: open session: %v", o.Backend, err))
			final := sdk.FaultOf(err) == sdk.FaultUser || (r.retriesLeft && r.notReady(ctx, l, err))
			return r.endEarly(h, sdk.StopError, resume, final)
		}
		sessID = sess.ID()
		r.setSessionID(sessID)
		if p := sess.Process(); p.PGID > 1 {
			h.RecordProcess(p)
		}
		if err := h.setModelEndpoints(o.Backend, sb, sess); err != nil {
			r.fail(h, "sandbox", err.Error())
			return r.endEarly(h, sdk.StopError, resume, true)
		}
	}

	start := event.Event{}
	if sf, ok := sess.(sdk.StartFielder); ok {
		for k, v := range sf.StartFields() {
			start[k] = v
		}
	}
	for k, v := range map[string]any{
		"event": string(event.TypeSessionStart), "backend": o.Backend, "dir": o.Dir, "plugin": pluginName,
		"plugin_version": pluginVersion, "protocol_version": plugin.ProtocolVersion,
	} {
		start[k] = v
	}
	if o.Model != "" {
		start["model"] = o.Model
	}
	addLaunchFields(start, o.PermissionMode, o.LaunchContext)
	addSandboxFields(start, o.Sandbox)
	if o.Observer != nil {
		o.Observer.Opened(sessID)
	}
	if reattach == nil {
		h.emit(start)
		if o.Observer != nil {
			o.Observer.Started(sessID)
		}
	}

	// Turns of this attempt: the prompt, then (control plane) an
	// interrupt's text or queued prompts after a clean turn (docs/run.md#multi-turn).
	text, images := o.Prompt, o.Images
	var out turnOutcome
	for {
		n := r.turns.next()
		turnID := r.turnPrefix + strconv.Itoa(n)
		r.status.update(func(s *Status) { s.TurnState = TurnStarting })
		if limit := r.spendReached(adopted); limit != "" {
			// Already at a limit (a follow-up of a runtime that reached
			// it): no turn runs until set_budget raises it.
			out = r.budgetReached(h, limit)
			break
		}
		switch {
		case adopted != "" && o.RateLimit.Until.IsZero():
			turnID, adopted = adopted, "" // its avenor.turn.start is in the log
		case !o.RateLimit.Until.IsZero():
			adopted = "" // a restored rate-limit wait: the turn began before, and ended in the plugin
		default:
			h.emit(event.Event{"event": string(event.TypeTurnStart), "turn": n, "prompt_length": len(text)})
		}
		r.status.update(func(s *Status) { s.TurnState = TurnRunning })
		send := func(t sdk.Turn) turnOutcome {
			began := o.Now()
			out := r.turn(ctx, l, sess, h, t)
			due := r.contextUse(h, &out)
			r.chargeTurn(h, &out, o.Now().Sub(began))
			if due != nil && !out.pluginGone && ctx.Err() == nil && sentinel.ExitCode(out.stopReason) == 0 {
				r.compact(ctx, sess, h, t.ID, *due)
			}
			return out
		}
		out = r.sendTurn(ctx, turnSender{h: h, send: send}, sdk.Turn{ID: turnID, Text: text, Images: images})
		images = nil // the prompt's; later turns of the attempt are follow-ups
		if out.sessionID != "" {
			sessID = out.sessionID
		}
		if recovered, stop := r.recoverSandbox(ctx, h, out); stop {
			out = recovered
			break
		}
		if out.pluginGone || ctx.Err() != nil || out.stopReason == sdk.StopBudgetReached {
			break
		}
		var ok bool
		if text, ok = r.turns.following(out.interrupted, sentinel.ExitCode(out.stopReason) == 0, o.FollowUp); !ok {
			break
		}
		// Another turn follows (a queued prompt, an interrupt's text): this
		// one still ends with its own session.end — its stop reason, output
		// and usage — as in the original (docs/run.md#multi-turn), so a harness waiting for
		// each turn's end sees it. The stream then reopens for the next
		// turn, whose statuses start afresh like a new attempt's.
		r.status.update(func(s *Status) { s.TurnState = TurnEnding })
		r.endSession(h, out)
		h.final.Reset()
		h.reopen(r)
		r.status.update(func(s *Status) { s.Phase, s.PhaseLabel, s.TurnState = PhaseIdle, "", TurnIdle })
	}
	r.status.update(func(s *Status) { s.TurnState = TurnEnding })
	if !out.restarted { // else its session goes on in a fresh process
		r.endSession(h, out)
	}
	// The text is in the log now: a session kept between runs must not
	// hold a whole answer until its next turn.
	h.final.Reset()

	if !out.pluginGone && o.KeepSession && ctx.Err() == nil && pluginAlive(l) {
		h.park()
		keep = true
		return attemptResult{stopReason: out.stopReason, sessionID: sessID, final: out.final,
			held: &HeldSession{l: l, sess: sess, h: h, id: sessID}}
	}
	if !out.pluginGone {
		cctx, cancel := context.WithTimeout(context.Background(), closeBudget)
		if err := sess.Close(cctx); err != nil {
			o.Logger.Warn("closing the session failed", "error", err)
		}
		cancel()
	}
	return attemptResult{stopReason: out.stopReason, sessionID: sessID, final: out.final}
}

// notReady asks the backend, after its session failed to open for a
// runtime fault, whether the runtime is usable here at all (Check: binary,
// version, auth). When it is not — a missing CLI, missing credentials — a
// retry would fail the same way after its backoff, so the attempt is final
// and the user is told what Check says to fix.
func (r *Runner) notReady(ctx context.Context, l *plugins.Launched, openErr error) bool {
	if sdk.FaultOf(openErr) != sdk.FaultRuntime {
		return false
	}
	o := &r.opts
	cctx, cancel := context.WithTimeout(ctx, CheckBudget)
	defer cancel()
	rd := l.Backend.Check(cctx, sdk.CheckRequest{Backend: o.Backend, Env: o.Env, Options: o.PluginOptions})
	if rd.Ready || cctx.Err() != nil {
		return false
	}
	msg := rd.Message
	if msg == "" {
		msg = "its check failed"
	}
	if !strings.Contains(openErr.Error(), msg) {
		fmt.Fprintf(o.Stderr, "avenor: backend %s is not usable here: %s\n", o.Backend, msg)
	}
	fmt.Fprintf(o.Stderr, "avenor: not retrying: the same failure would come back (fix the above, then run again)\n")
	return true
}

// endEarly writes the session.end of an attempt that never reached a turn,
// so a harness always finds one.
func (r *Runner) endEarly(h *sessionHost, stop sdk.StopReason, sessionID string, final bool) attemptResult {
	ev := event.Event{"event": string(event.TypeSessionEnd), "stop_reason": string(stop)}
	if h != nil {
		h.emit(ev)
	} else {
		r.emit(ev)
	}
	return attemptResult{stopReason: stop, sessionID: sessionID, final: final}
}

// endStopped ends an attempt stopped (ctx done) before it reached a turn:
// as endEarly, with the stop reason of ctx, but with no session.end when
// the run is restarting, whose session goes on.
func (r *Runner) endStopped(ctx context.Context, h *sessionHost, sessionID string) attemptResult {
	if restarting(ctx) {
		return attemptResult{stopReason: stopReasonOf(ctx), sessionID: sessionID, final: true}
	}
	return r.endEarly(h, stopReasonOf(ctx), sessionID, true)
}

// turnOutcome is how one turn ended, as the host decided it.
type turnOutcome struct {
	stopReason  sdk.StopReason
	usage       *sdk.Usage
	finalOutput string
	hasFinal    bool
	extra       map[string]any
	sessionID   string
	pluginGone  bool
	final       bool
	// interrupted: ended by interrupt_and_prompt, the session goes on.
	interrupted bool
	// restarted: stopped by Restart (ErrRestart), the session goes on in
	// a fresh process; a turn that ended on its own is not.
	restarted bool
	// rateLimit: the turn failed on a rate limit (sendTurn reports it).
	rateLimit *rateLimited
}

type promptReturn struct {
	res sdk.TurnResult
	err error
}

// turn runs one prompt, enforcing the run clock, the progress watchdog,
// interrupts and the plugin's life.
func (r *Runner) turn(ctx context.Context, l *plugins.Launched, sess sdk.Session, h *sessionHost, t sdk.Turn) turnOutcome {
	o := &r.opts
	pctx, cancelPrompt := context.WithCancel(context.Background())
	defer cancelPrompt()
	done := make(chan promptReturn, 1)
	go func() {
		res, err := sess.Prompt(pctx, t)
		done <- promptReturn{res, err}
	}()

	var progress <-chan time.Time
	var timer *time.Timer
	if o.ProgressTimeout > 0 {
		timer = time.NewTimer(o.ProgressTimeout)
		defer timer.Stop()
		progress = timer.C
	}
	dog := r.startDog()
	defer r.stopDog()
	var restartFailed chan error
	if dog != nil {
		restartFailed = make(chan error, 1)
	}
	spendWall, stopSpendWall := r.spendWallTimer()
	defer stopSpendWall()
	for {
		select {
		case <-spendWall:
			// --spend-policy interrupt: the wall limit passed mid-turn.
			r.status.update(func(s *Status) { s.TurnState = TurnCancelling })
			return r.stopTurn(l, sess, h, done, sdk.StopBudgetReached, "")
		case pr := <-done:
			return r.outcome(h, pr)
		case <-h.activity:
			if timer != nil {
				timer.Reset(o.ProgressTimeout)
			}
		case <-dog:
			for _, f := range r.dog.sample(l, h, o.Now()) {
				if r.fire(l, h, f, restartFailed) == WatchdogCancel {
					r.status.update(func(s *Status) { s.TurnState = TurnCancelling })
					return r.stopTurn(l, sess, h, done, sdk.StopCancelled, "")
				}
			}
		case err := <-restartFailed:
			r.fail(h, "watchdog", fmt.Sprintf("the watchdog could not restart the turn, cancelling it instead: %v", err))
			r.status.update(func(s *Status) { s.TurnState = TurnCancelling })
			return r.stopTurn(l, sess, h, done, sdk.StopCancelled, "")
		case <-ctx.Done():
			r.status.update(func(s *Status) { s.TurnState = TurnCancelling })
			out := r.stopTurn(l, sess, h, done, stopReasonOf(ctx), "")
			out.restarted = restarting(ctx)
			return out
		case <-progress:
			if r.dog == nil { // exactly as without the watchdog
				return r.stopTurn(l, sess, h, done, sdk.StopProgressTimeout, "")
			}
			if out, stop := r.progressFired(l, sess, h, done, timer, restartFailed); stop {
				return out
			}
		case err := <-h.fatal:
			return r.stopTurn(l, sess, h, done, sdk.StopError, err.Error())
		case <-r.turns.interrupt:
			r.status.update(func(s *Status) { s.TurnState = TurnCancelling })
			out := r.stopTurn(l, sess, h, done, sdk.StopCancelled, "")
			out.interrupted, out.final = !out.pluginGone, out.pluginGone
			return out
		}
	}
}

// outcome turns what Prompt returned into the turn's outcome.
func (r *Runner) outcome(h *sessionHost, pr promptReturn) turnOutcome {
	res := pr.res
	out := turnOutcome{
		stopReason: res.StopReason, usage: res.Usage, finalOutput: res.FinalOutput,
		hasFinal: res.HasFinalOutput, extra: res.Extra, sessionID: res.SessionID,
	}
	if pr.err != nil {
		out.stopReason = sdk.StopError
		out.pluginGone = errors.Is(pr.err, plugin.ErrPluginGone)
		// A user's mistake (a bad script, a bad option) fails the same way
		// again: retrying it only costs the backoff.
		out.final = sdk.FaultOf(pr.err) == sdk.FaultUser
		if out.rateLimit = rateLimitOf(pr.err); out.rateLimit == nil {
			r.fail(h, "backend", pr.err.Error())
		}
	}
	if pr.err == nil && out.stopReason == sdk.StopError {
		for _, k := range []string{"error_message", "error"} {
			if msg, ok := res.Extra[k].(string); ok {
				r.sayBackendError(msg)
			}
		}
	}
	if out.stopReason == "" {
		out.stopReason = sdk.StopEndTurn
	}
	return out
}

// stopTurn cancels the turn in flight through the plugin and waits
// CancelBudget for it to end; a plugin that does not end it is killed
// together with its runtime. The turn ends with reason (overriding what the
// plugin said) and keeps the plugin's usage and output.
func (r *Runner) stopTurn(l *plugins.Launched, sess sdk.Session, h *sessionHost, done <-chan promptReturn, reason sdk.StopReason, errMsg string) turnOutcome {
	o := &r.opts
	if errMsg != "" {
		r.fail(h, "permission", errMsg)
	}
	cctx, cancel := context.WithTimeout(context.Background(), o.CancelBudget)
	defer cancel()
	if err := sess.Cancel(cctx); err != nil {
		o.Logger.Debug("cancel did not reach the plugin", "error", err)
	}
	var pr promptReturn
	killed := false
	select {
	case pr = <-done:
	case <-cctx.Done():
		killed = true
		r.fail(h, "cancel", fmt.Sprintf("plugin %s did not end the cancelled turn within %s; killed it and its runtime", l.Client.Info().Name, o.CancelBudget))
		l.Client.Kill()
		if p := h.process().PGID; p > 1 {
			_ = agentproc.KillGroup(p)
		}
		select {
		case pr = <-done:
		case <-time.After(closeBudget):
		}
	}
	return turnOutcome{
		stopReason: reason, usage: pr.res.Usage, finalOutput: pr.res.FinalOutput, hasFinal: pr.res.HasFinalOutput,
		extra: pr.res.Extra, sessionID: pr.res.SessionID, pluginGone: killed, final: true,
	}
}

// endSession writes session.end, the last event of the attempt.
func (r *Runner) endSession(h *sessionHost, out turnOutcome) {
	ev := event.Event{}
	for k, v := range out.extra {
		ev[k] = v
	}
	ev["event"] = string(event.TypeSessionEnd)
	ev["stop_reason"] = string(out.stopReason)
	if out.usage != nil {
		ev["usage"] = map[string]any{
			"input_tokens": out.usage.InputTokens, "output_tokens": out.usage.OutputTokens,
			"total_tokens": out.usage.TotalTokens, "cached_read_tokens": out.usage.CachedReadTokens,
		}
	}
	if out.hasFinal {
		ev["final_output"] = out.finalOutput
	} else if text := h.final.Text(); text != "" {
		ev["final_output"] = text
	}
	if out.sessionID != "" {
		ev["session_id"] = out.sessionID
	}
	h.emit(ev)
}

// CheckThinking validates --thinking against the levels the backend accepts
// (docs/backends.md#capability-matrix).
func CheckThinking(info sdk.BackendInfo, level string) error {
	if level == "" {
		return nil
	}
	if !validLevel(level) {
		return fmt.Errorf("invalid thinking level %q; valid levels: off, minimal, low, medium, high, xhigh, max", level)
	}
	if len(info.ThinkingLevels) == 0 {
		return fmt.Errorf("backend %q does not support parameter \"thinking\"", info.Name)
	}
	if !info.AcceptsThinking(level) {
		return fmt.Errorf("backend %q does not support thinking level %q; accepted: %s", info.Name, level, strings.Join(info.ThinkingLevels, ", "))
	}
	return nil
}

func validLevel(level string) bool {
	for _, l := range sdk.ThinkingLevels {
		if l == level {
			return true
		}
	}
	return false
}

// newTurnPrefix is a random prefix for a runner's turn ids ("3f9a0c1e-").
func newTurnPrefix() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	}
	return hex.EncodeToString(b[:]) + "-"
}
