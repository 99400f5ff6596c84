package control

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/avenor-go/avenor/host/event"
	hostrt "github.com/avenor-go/avenor/host/runner"
)

// Runtime is what the one-shot methods control: *runtime.Runner.
type Runtime interface {
	Status() hostrt.Status
	Prompt(text string) error
	InterruptAndPrompt(text string, keepQueue bool) error
	Cancel()
	Events() *event.Writer
}

// PermissionAnswerer answers the pending permission request of a runtime
// (the permission broker's control route). Answer returns an error wrapping
// ErrNoPendingPermission when nothing is pending or requestID is not the
// pending request's.
type PermissionAnswerer interface {
	Answer(requestID, optionID, message string) error
	Pending() bool
}

// Bounds of history and replay (docs/control-protocol.md#methods, docs/control-protocol.md#subscribe).
const (
	DefaultHistoryLimit = 64
	MaxHistoryLimit     = 256
	// SubscriberQueue is each subscription's queue; a full queue drops its
	// oldest event and the subscriber gets subscriber.lagged.
	SubscriberQueue = event.DefaultQueue
)

// RunOptions are the one-shot server's dependencies beyond the runtime.
type RunOptions struct {
	// Permissions answers answer_permission; nil: every call gets -32001.
	Permissions PermissionAnswerer
	// RunID is the run's id; a runtime_id param equal to it is accepted as
	// naming this run's only runtime. Default: none accepted.
	RunID string
}

// RegisterRun registers the control method table of `avenor run
// --control-socket` (docs/control-protocol.md#methods) on s for rt: a supervisor of one whose
// default runtime is the run. Call it before Start. The stable-only methods
// stay unregistered, so they answer -32601.
//
// A one-shot run has one runtime, so runtime_id is never required (stable
// requires it for history, replay and after_seq); when given it must be the
// run's id, else -32601 says so rather than answering for another runtime.
func RegisterRun(s *Server, rt Runtime, opts RunOptions) { NewRun(rt, opts).Register(s) }

// Run is a one-shot run as the control method table serves it: a
// supervisor of one (Supervisor) whose default runtime is the run (Target).
// The control socket and the HTTP debug adapter serve the same one.
type Run struct {
	rt    Runtime
	perm  PermissionAnswerer
	runID string

	mu       sync.Mutex
	endSeq   int64 // seq of the last session.end seen
	endFinal string
}

// NewRun is the one-shot run of rt; opts as RegisterRun's.
func NewRun(rt Runtime, opts RunOptions) *Run {
	return &Run{rt: rt, perm: opts.Permissions, runID: opts.RunID}
}

// Register registers the method table over r on s, and r's result tracker.
// Call it before Start.
func (r *Run) Register(s *Server) {
	s.Go(r.trackResult)
	RegisterTable(s, r, TableOptions{})
}

// Pending reports whether a permission request waits for an answer.
func (r *Run) Pending() bool { return r.perm != nil && r.perm.Pending() }

// Accept refuses a runtime_id naming anything but this run.
//
// A runtime_id naming another runtime is a form only stable has (docs/control-protocol.md#methods), and
// a one-shot run answers stable-only forms -32601 (docs/control-protocol.md#errors), as the original
// does; the detail says how to call it instead.
func (r *Run) Accept(c *Call, runtimeID string) error {
	if runtimeID == "" || (r.runID != "" && runtimeID == r.runID) {
		return nil
	}
	return newError(CodeMethodNotFound, MsgMethodNotFound, fmt.Sprintf(
		"%s with runtime_id %q is a stable form: this one-shot avenor run controls one runtime; omit runtime_id", c.Method, runtimeID))
}

// Runtime is the run, whatever the (accepted) id.
func (r *Run) Runtime(string) (Target, error) { return r, nil }

// ID is "": history echoes the runtime_id param as given.
func (r *Run) ID() string { return "" }

// Status is the run's docs/control-protocol.md#status snapshot.
func (r *Run) Status() any { return r.rt.Status() }

// Events is the run's event stream.
func (r *Run) Events() *event.Writer { return r.rt.Events() }

// Cancel is SIGINT's: stop reason cancelled, exit 130.
func (r *Run) Cancel() { r.rt.Cancel() }

// Prompt queues text, or interrupts the turn for it.
func (r *Run) Prompt(_ context.Context, text string, interrupt, keepQueue bool) error {
	var err error
	if interrupt {
		err = r.rt.InterruptAndPrompt(text, keepQueue)
	} else {
		err = r.rt.Prompt(text)
	}
	if errors.Is(err, hostrt.ErrEmptyPrompt) {
		return InvalidParams(err.Error())
	}
	return err
}

// AnswerPermission answers through the broker; without one nothing is
// ever pending.
func (r *Run) AnswerPermission(requestID, optionID, message string) error {
	if r.perm == nil {
		return ErrNoPendingPermission
	}
	return r.perm.Answer(requestID, optionID, message)
}

// AnswerPermissionAs implements SourcedTarget: the answer names the front
// door it came through, when the broker can record it.
func (r *Run) AnswerPermissionAs(source, requestID, optionID, message string) error {
	if r.perm == nil {
		return ErrNoPendingPermission
	}
	if sa, ok := r.perm.(SourcedAnswerer); ok {
		return sa.AnswerAs(source, requestID, optionID, message)
	}
	return r.perm.Answer(requestID, optionID, message)
}

// trackResult remembers the complete final_output of the latest session.end,
// so result stays lossless however long ago it was written.
func (r *Run) trackResult(ctx context.Context) {
	sub := r.rt.Events().Subscribe(4 * SubscriberQueue)
	defer sub.Close()
	// Batches, not one channel hand-off per event: this reader sees every
	// event of a flood and keeps only session.end.
	stop := context.AfterFunc(ctx, sub.Close)
	defer stop()
	// Items, not events: a plugin's events are then never decoded for a
	// reader that wants only the session.end.
	var batch []event.Item
	for {
		var more bool
		batch, more = sub.ReceiveItems(batch[:0])
		for _, it := range batch {
			if it.Type() == event.TypeSessionEnd {
				r.noteEnd(it.Event())
			}
		}
		clear(batch)
		if !more {
			return
		}
	}
}

func (r *Run) noteEnd(ev event.Event) {
	seq, _ := SeqOf(ev)
	final, _ := ev["final_output"].(string)
	r.mu.Lock()
	if seq > r.endSeq {
		r.endSeq, r.endFinal = seq, final
	}
	r.mu.Unlock()
}

// Result is the final_output of the latest session.end.
func (r *Run) Result() any {
	// The tracker may not have caught up with a session.end just written:
	// the history has it.
	h := r.rt.Events().History(0, 0)
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Type() == event.TypeSessionEnd {
			r.noteEnd(h[i])
			break
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return map[string]any{"final_output": r.endFinal}
}
