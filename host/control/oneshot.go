package control

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/avenor-go/avenor/host/event"
	hostrt "github.com/avenor-go/avenor/host/runtime"
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

// Bounds of history and replay (contract §5.4, §5.7).
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

// RegisterRun registers the one-shot methods of `avenor run --control-socket`
// (contract §5.4) on s for rt. Call it before Start. The stable-only
// methods stay unregistered, so they answer -32601.
//
// A one-shot run has one runtime, so runtime_id is never required (stable
// requires it for history, replay and after_seq); when given it must be the
// run's id, else -32602 says so rather than answering for another runtime.
func RegisterRun(s *Server, rt Runtime, opts RunOptions) {
	r := &runMethods{rt: rt, perm: opts.Permissions, runID: opts.RunID}
	s.Go(r.trackResult)
	s.Handle("status", Method{Handler: r.status})
	s.Handle("result", Method{Handler: r.result})
	s.Handle("subscribe", Method{Handler: r.subscribe})
	s.Handle("history", Method{Handler: r.history})
	s.Handle("cancel", Method{Mutating: true, Handler: r.cancel})
	s.Handle("prompt", Method{Mutating: true, Handler: r.prompt})
	s.Handle("interrupt_and_prompt", Method{Mutating: true, Handler: r.interruptAndPrompt})
	s.Handle("answer_permission", Method{Mutating: true, Handler: r.answerPermission})
}

type runMethods struct {
	rt    Runtime
	perm  PermissionAnswerer
	runID string

	mu       sync.Mutex
	endSeq   int64 // seq of the last session.end seen
	endFinal string
}

// target is the runtime_id every one-shot method accepts.
type target struct {
	RuntimeID string `json:"runtime_id"`
}

// check refuses a runtime_id naming anything but this run.
func (r *runMethods) check(t target) error {
	if t.RuntimeID == "" || (r.runID != "" && t.RuntimeID == r.runID) {
		return nil
	}
	return InvalidParams(fmt.Sprintf("unknown runtime_id %q: this one-shot avenor run controls one runtime; omit runtime_id", t.RuntimeID))
}

func (r *runMethods) status(_ context.Context, c *Call) (any, error) {
	var p target
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	if err := r.check(p); err != nil {
		return nil, err
	}
	return r.rt.Status(), nil
}

// trackResult remembers the complete final_output of the latest session.end,
// so result stays lossless however long ago it was written.
func (r *runMethods) trackResult(ctx context.Context) {
	sub := r.rt.Events().Subscribe(4 * SubscriberQueue)
	defer sub.Close()
	// Batches, not one channel hand-off per event: this reader sees every
	// event of a flood and keeps only session.end.
	stop := context.AfterFunc(ctx, sub.Close)
	defer stop()
	var batch []event.Event
	for {
		var more bool
		batch, more = sub.Receive(batch[:0])
		for _, ev := range batch {
			if ev.Type() == event.TypeSessionEnd {
				r.noteEnd(ev)
			}
		}
		clear(batch)
		if !more {
			return
		}
	}
}

func (r *runMethods) noteEnd(ev event.Event) {
	seq, _ := seqOf(ev)
	final, _ := ev["final_output"].(string)
	r.mu.Lock()
	if seq > r.endSeq {
		r.endSeq, r.endFinal = seq, final
	}
	r.mu.Unlock()
}

func (r *runMethods) result(_ context.Context, c *Call) (any, error) {
	var p target
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	if err := r.check(p); err != nil {
		return nil, err
	}
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
	return map[string]any{"final_output": r.endFinal}, nil
}

type subscribeParams struct {
	target
	Replay   bool  `json:"replay"`
	Limit    int   `json:"limit"`
	AfterSeq int64 `json:"after_seq"`
}

// limit applies the default and cap of history and replay.
func limit(n int) (int, error) {
	switch {
	case n < 0:
		return 0, InvalidParams("limit must not be negative")
	case n == 0:
		return DefaultHistoryLimit, nil
	default:
		return min(n, MaxHistoryLimit), nil
	}
}

func (r *runMethods) subscribe(_ context.Context, c *Call) (any, error) {
	var p subscribeParams
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	if err := r.check(p.target); err != nil {
		return nil, err
	}
	n, err := limit(p.Limit)
	if err != nil {
		return nil, err
	}
	if p.AfterSeq < 0 {
		return nil, InvalidParams("after_seq must not be negative")
	}
	// Replay and subscription are taken atomically; without replay the
	// replay is dropped and only after_seq's filter remains.
	replay, sub := r.rt.Events().SubscribeWithReplay(p.AfterSeq, n, SubscriberQueue)
	if !p.Replay {
		replay = nil
	}
	// The connection owns the subscription once forwarding starts; the
	// reply is written first so that it precedes the first event.
	c.AfterReply(func() { c.Conn.Forward(replay, sub, p.AfterSeq) })
	return map[string]any{"subscribed": true}, nil
}

type historyParams struct {
	target
	Limit    int   `json:"limit"`
	AfterSeq int64 `json:"after_seq"`
}

func (r *runMethods) history(_ context.Context, c *Call) (any, error) {
	var p historyParams
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	if err := r.check(p.target); err != nil {
		return nil, err
	}
	n, err := limit(p.Limit)
	if err != nil {
		return nil, err
	}
	if p.AfterSeq < 0 {
		return nil, InvalidParams("after_seq must not be negative")
	}
	w := r.rt.Events()
	latest := w.LatestSeq()
	events := w.History(p.AfterSeq, n)
	out := make([]event.Event, len(events))
	for i, ev := range events {
		out[i] = event.Truncate(ev, event.FinalOutputLimit)
	}
	return map[string]any{"runtime_id": p.RuntimeID, "events": out, "latest_seq": latest}, nil
}

func (r *runMethods) cancel(_ context.Context, c *Call) (any, error) {
	var p target
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	if err := r.check(p); err != nil {
		return nil, err
	}
	r.rt.Cancel()
	return map[string]any{"ok": true}, nil
}

type promptParams struct {
	target
	Text      *string `json:"text"`
	RequestID string  `json:"request_id"`
	KeepQueue bool    `json:"keep_queue"`
}

func (r *runMethods) decodePrompt(c *Call) (string, promptParams, error) {
	var p promptParams
	if err := c.Decode(&p); err != nil {
		return "", p, err
	}
	if err := r.check(p.target); err != nil {
		return "", p, err
	}
	if p.Text == nil {
		return "", p, MissingParams("text")
	}
	if *p.Text == "" {
		return "", p, InvalidParams("text is empty")
	}
	return *p.Text, p, nil
}

// runtimeError maps the runtime's refusals to answers.
func runtimeError(err error) error {
	if errors.Is(err, hostrt.ErrEmptyPrompt) {
		return InvalidParams(err.Error())
	}
	return err
}

func (r *runMethods) prompt(_ context.Context, c *Call) (any, error) {
	text, _, err := r.decodePrompt(c)
	if err != nil {
		return nil, err
	}
	if err := r.rt.Prompt(text); err != nil {
		return nil, runtimeError(err)
	}
	return map[string]any{"accepted": true}, nil
}

func (r *runMethods) interruptAndPrompt(_ context.Context, c *Call) (any, error) {
	text, p, err := r.decodePrompt(c)
	if err != nil {
		return nil, err
	}
	if err := r.rt.InterruptAndPrompt(text, p.KeepQueue); err != nil {
		return nil, runtimeError(err)
	}
	return map[string]any{"accepted": true}, nil
}

type answerParams struct {
	target
	RequestID string `json:"request_id"`
	OptionID  string `json:"option_id"`
	Message   string `json:"message"`
}

func (r *runMethods) answerPermission(_ context.Context, c *Call) (any, error) {
	var p answerParams
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	if err := r.check(p.target); err != nil {
		return nil, err
	}
	var missing []string
	if p.RequestID == "" {
		missing = append(missing, "request_id")
	}
	if p.OptionID == "" {
		missing = append(missing, "option_id")
	}
	if len(missing) > 0 {
		return nil, MissingParams(missing...)
	}
	if r.perm == nil || !r.perm.Pending() {
		return nil, ErrNoPendingPermission
	}
	if err := r.perm.Answer(p.RequestID, p.OptionID, p.Message); err != nil {
		return nil, err
	}
	return map[string]any{"accepted": true}, nil
}
