package run

import (
	"context"
	"errors"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/loop"
	"github.com/avenor-go/avenor/host/permission"
	hostrt "github.com/avenor-go/avenor/host/runner"
)

// Runtime is one runtime: its event writer, its permission broker and its
// run — a runner, or the phases of a phased run — with the run's status,
// session and result. It is a control.Target: the control method table
// and the HTTP debug adapter serve it as it is.
//
// Its life: New, then Start once; Wait returns how the run ended; Close
// releases the event writer once nothing reads it any more.
type Runtime struct {
	spec   Spec
	log    hclog.Logger
	w      *event.Writer
	broker *permission.Broker
	// run is the control plane's way into the run: the runner, or the
	// phases' runtimes (status and prompts reach the phase in flight,
	// cancel the run).
	run    runRef
	runFn  func(context.Context) Result
	cancel context.CancelCauseFunc

	startOnce sync.Once
	done      chan struct{}
	res       Result

	mu sync.Mutex
	// end is the latest session.end (by seq): result's final_output.
	end hostrt.SessionEnd
}

// runRef is what the control plane reaches in a run.
type runRef interface {
	Status() hostrt.Status
	Prompt(text string) error
	InterruptAndPrompt(text string, keepQueue bool) error
	Cancel()
}

// New assembles the runtime of spec — one batched event writer, the
// permission broker, the runner or the phases of spec.Phased — ready to
// Start. Nothing runs yet.
func New(spec Spec) *Runtime {
	opts, perms := spec.Options, spec.Permissions
	rt := &Runtime{spec: spec, log: opts.Logger, done: make(chan struct{})}
	if rt.log == nil {
		rt.log = hclog.NewNullLogger()
	}
	// The runner's facts reach the runtime typed (rt.Ended), whoever else
	// observes them.
	opts.Observer = observers{rt, opts.Observer}
	if ph := spec.Phased; ph != nil {
		w := hostrt.NewEventWriter(opts.Events, event.Stamp{RunID: opts.RunID, RunLabel: opts.Label})
		rts := &loop.Runtimes{Backend: ph.Backend, CancelRun: func() { rt.cancelRun() }}
		perms.CancelRun, perms.SessionID = rts.Cancel, rts.SessionID
		rt.broker = permission.New(perms)
		base := opts
		base.Writer, base.Events = w, nil
		rts.Base = base
		rts.Permissions = hostrt.BrokerPermissions(rt.broker)
		rts.SerialPermissions = perms.FileBase != ""
		lopts := loop.Options{
			RunID: opts.RunID, Dir: opts.Dir, Writer: w, SentinelPath: opts.SentinelPath, Timeout: opts.Timeout,
			Initial: opts.Prompt, Identity: ph.Identity, Phases: rts.Run, Stderr: opts.Stderr,
		}
		rt.w, rt.run = w, rts
		rt.runFn = func(ctx context.Context) Result {
			res := ph.Run(ctx, lopts)
			return Result{ExitCode: res.ExitCode, StopReason: res.StopReason, SessionID: res.SessionID, SentinelErr: res.SentinelErr}
		}
		return rt
	}
	// The broker cancels the run on a "cancelled" answer and names the
	// current session in its .req files; both come from the runner.
	var runner *hostrt.Runner
	perms.CancelRun = func() { runner.Cancel() }
	perms.SessionID = func() string { return runner.Status().SessionID }
	rt.broker = permission.New(perms)
	runner = hostrt.New(opts, hostrt.BrokerPermissions(rt.broker))
	rt.w, rt.run = runner.Events(), runner
	rt.runFn = func(ctx context.Context) Result {
		res := runner.Run(ctx)
		return Result{ExitCode: res.ExitCode, StopReason: res.StopReason, SessionID: res.SessionID, SentinelErr: res.SentinelErr}
	}
	return rt
}

// SetControl routes the broker's permission requests to a control plane
// (docs/permission-handler.md#precedence); call it before Start.
func (rt *Runtime) SetControl(c permission.ControlResolver) { rt.broker.SetControl(c) }

// Start runs the runtime's run in the background; ctx cancelled with
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

// Done is closed once the run has ended.
func (rt *Runtime) Done() <-chan struct{} { return rt.done }

// Wait waits for the run to end and returns how it ended.
func (rt *Runtime) Wait() Result {
	<-rt.done
	return rt.res
}

// Close closes the event writer (flushing the log); call it after Wait,
// once nothing serves the runtime any more.
func (rt *Runtime) Close() error { return rt.w.Close() }

// cancelRun ends the whole run cancelled (a phased run's control cancel).
func (rt *Runtime) cancelRun() {
	rt.mu.Lock()
	cancel := rt.cancel
	rt.mu.Unlock()
	if cancel != nil {
		cancel(hostrt.ErrInterrupted)
	}
}

// ID implements control.Target: the stable runtime id, "" for the run of
// `avenor run` (history echoes the runtime_id param as given).
func (rt *Runtime) ID() string { return rt.spec.RuntimeID }

// Snapshot is the run's status snapshot (docs/control-protocol.md#status).
func (rt *Runtime) Snapshot() control.Status { return rt.run.Status() }

// Status implements control.Target: the snapshot.
func (rt *Runtime) Status() any { return rt.run.Status() }

// Events implements control.Target.
func (rt *Runtime) Events() *event.Writer { return rt.w }

// Cancel implements control.Target: as SIGINT, stop reason cancelled,
// exit 130.
func (rt *Runtime) Cancel() { rt.run.Cancel() }

// Prompt implements control.Target: text queued, or interrupting the turn.
func (rt *Runtime) Prompt(_ context.Context, text string, interrupt, keepQueue bool) error {
	var err error
	if interrupt {
		err = rt.run.InterruptAndPrompt(text, keepQueue)
	} else {
		err = rt.run.Prompt(text)
	}
	if errors.Is(err, hostrt.ErrEmptyPrompt) {
		return control.InvalidParams(err.Error())
	}
	return err
}

// AnswerPermission implements control.Target through the broker.
func (rt *Runtime) AnswerPermission(requestID, optionID, message string) error {
	return control.BrokerAnswerer{Broker: rt.broker}.Answer(requestID, optionID, message)
}

// AnswerPermissionAs implements control.SourcedTarget.
func (rt *Runtime) AnswerPermissionAs(source, requestID, optionID, message string) error {
	return control.BrokerAnswerer{Broker: rt.broker}.AnswerAs(source, requestID, optionID, message)
}

// Pending reports whether a permission request waits for an answer.
func (rt *Runtime) Pending() bool { return control.BrokerAnswerer{Broker: rt.broker}.Pending() }

// Result implements control.Target: the final_output of the latest
// session.end, lossless however long ago it was written.
func (rt *Runtime) Result() any {
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

// observers is the runtime's own observer, then its spec's.
type observers struct {
	rt   *Runtime
	next hostrt.Observer
}

func (o observers) Opened(sessionID string) {
	if o.next != nil {
		o.next.Opened(sessionID)
	}
}

func (o observers) Started(sessionID string) {
	if o.next != nil {
		o.next.Started(sessionID)
	}
}

func (o observers) Ended(e hostrt.SessionEnd) {
	o.rt.noteEnd(e)
	if o.next != nil {
		o.next.Ended(e)
	}
}
