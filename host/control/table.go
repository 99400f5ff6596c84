package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/avenor-go/avenor/host/permission"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Target is one runtime as the control method table serves it: the run of
// `avenor run --control-socket` or one runtime of `avenor stable`. Errors a
// method returns are the call's answer (docs/control-protocol.md#errors): a *Error as it is, any other
// error -32000 with its text.
type Target interface {
	// ID is the runtime's id, echoed as history's runtime_id; "" echoes the
	// runtime_id param as given (a one-shot run).
	ID() string
	// Status is status's answer: the docs/control-protocol.md#status snapshot of a one-shot run, the
	// docs/control-protocol.md#list entry of a stable runtime.
	Status() any
	// Result is result's answer.
	Result() any
	// Events is the runtime's event stream: history and subscribe.
	Events() *event.Writer
	// Cancel ends the runtime's run cancelled (exit 130); a runtime with no
	// run has nothing to cancel.
	Cancel()
	// Prompt queues text (interrupt false) or interrupts the turn and runs
	// text next (keepQueue: the queued prompts stay), for prompt and
	// interrupt_and_prompt. text is non-empty. ctx is the call's.
	Prompt(ctx context.Context, text string, interrupt, keepQueue bool) error
	// AnswerPermission answers the pending permission request: an error
	// wrapping ErrNoPendingPermission when nothing is pending (-32001).
	AnswerPermission(requestID, optionID, message string) error
}

// SourcedTarget is a Target that records which front door answered a
// permission (answer_permission's optional source: control, board), so
// permission.response names it.
type SourcedTarget interface {
	AnswerPermissionAs(source, requestID, optionID, message string) error
}

// Supervisor is the runtimes one method table serves: a one-shot run is a
// supervisor of one whose default runtime is the run; `avenor stable`
// serves its runtimes by id and adds its own methods beside the table.
type Supervisor interface {
	// Accept refuses, before the method's params are checked, a runtime_id
	// this supervisor can never serve (a one-shot run answers another
	// runtime's id -32601, a stable form). nil: go on.
	Accept(c *Call, runtimeID string) error
	// Runtime returns the runtime runtime_id names; "" is the default
	// runtime. The error is the answer (stable: -32602 without an id, its
	// unknown-runtime error for an id it does not hold).
	Runtime(runtimeID string) (Target, error)
}

// Snapshotter is a Supervisor whose status without runtime_id is its own
// snapshot (stable's: the default runtime's docs/control-protocol.md#status snapshot and the
// supervisor's summary), not its default runtime's status.
type Snapshotter interface {
	Snapshot() any
}

// AllSubscriber is a Supervisor whose subscribe without runtime_id follows
// every runtime, present and future (stable, docs/control-protocol.md#subscribe); replay and after_seq
// then need a runtime_id.
type AllSubscriber interface {
	// SubscribeAll starts the subscription of c's connection after the
	// reply (Call.AfterReply).
	SubscribeAll(c *Call)
}

// TableOptions are what differs between the supervisors a table serves.
type TableOptions struct {
	// RuntimeIDRequired: answer_permission names a missing runtime_id among
	// its missing params (stable).
	RuntimeIDRequired bool
	// ConcurrentPrompts: prompt and interrupt_and_prompt run beside the
	// connection's other calls, as they may wait (stable: for an executing
	// slot to continue a parked runtime).
	ConcurrentPrompts bool
}

// RegisterTable registers the control method table (docs/control-protocol.md#methods: status,
// result, subscribe, history, cancel, prompt, interrupt_and_prompt,
// answer_permission) on s over sup. Call it before Start. One table serves
// `avenor run --control-socket` and `avenor stable`, so
// their params, answers and errors cannot drift apart.
func RegisterTable(s *Server, sup Supervisor, opts TableOptions) {
	t := &table{sup: sup, opts: opts}
	s.Handle("status", Method{Handler: t.status})
	s.Handle("result", Method{Handler: t.result})
	s.Handle("subscribe", Method{Handler: t.subscribe})
	s.Handle("history", Method{Handler: t.history})
	s.Handle("cancel", Method{Mutating: true, Handler: t.cancel})
	s.Handle("prompt", Method{Mutating: true, Concurrent: opts.ConcurrentPrompts, Handler: t.prompt})
	s.Handle("interrupt_and_prompt", Method{Mutating: true, Concurrent: opts.ConcurrentPrompts, Handler: t.interruptAndPrompt})
	s.Handle("answer_permission", Method{Mutating: true, Handler: t.answerPermission})
	s.Handle("answer_question", Method{Mutating: true, Handler: t.answerQuestion})
}

// QuestionTarget is a Target whose runtime's questions can be answered
// (answer_question). A Target without it answers that the runtime asks
// no questions.
type QuestionTarget interface {
	// AnswerQuestion delivers answers (one per prompt) to the waiting
	// question requestID; source is one of permission.QuestionAnswerSources
	// or "". Its errors say what was wrong: no such question, already
	// answered, expired, or answers that do not fit.
	AnswerQuestion(source, requestID string, answers [][]string) error
}

type answerQuestionParams struct {
	target
	RequestID string          `json:"request_id"`
	Answers   json.RawMessage `json:"answers"`
	Source    string          `json:"source"`
}

func (tb *table) answerQuestion(_ context.Context, c *Call) (any, error) {
	var p answerQuestionParams
	if err := tb.decode(c, &p, &p.target); err != nil {
		return nil, err
	}
	var missing []string
	if tb.opts.RuntimeIDRequired && p.RuntimeID == "" {
		missing = append(missing, "runtime_id")
	}
	if p.RequestID == "" {
		missing = append(missing, "request_id")
	}
	if len(p.Answers) == 0 {
		missing = append(missing, "answers")
	}
	if len(missing) > 0 {
		return nil, MissingParams(missing...)
	}
	if !permission.ValidQuestionSource(p.Source) {
		return nil, InvalidParams(fmt.Sprintf("source %q is not one of %s; omit it (control) or name the front door",
			p.Source, strings.Join(permission.QuestionAnswerSources, ", ")))
	}
	answers, err := permission.ParseQuestionAnswers(p.Answers)
	if err != nil {
		return nil, InvalidParams(err.Error())
	}
	rt, err := tb.sup.Runtime(p.RuntimeID)
	if err != nil {
		return nil, err
	}
	qt, ok := rt.(QuestionTarget)
	if !ok {
		return nil, fmt.Errorf("this runtime asks no questions: no question %q is waiting", p.RequestID)
	}
	if err := qt.AnswerQuestion(p.Source, p.RequestID, answers); err != nil {
		if errors.Is(err, permission.ErrBadQuestionAnswer) {
			return nil, InvalidParams(err.Error())
		}
		return nil, err
	}
	return map[string]any{"accepted": true}, nil
}

type table struct {
	sup  Supervisor
	opts TableOptions
}

// target is the runtime_id every per-runtime method takes.
type target struct {
	RuntimeID string `json:"runtime_id"`
}

// decode decodes c's params into p (which embeds t) and lets the
// supervisor refuse the runtime_id.
func (tb *table) decode(c *Call, p any, t *target) error {
	if err := c.Decode(p); err != nil {
		return err
	}
	return tb.sup.Accept(c, t.RuntimeID)
}

// runtime decodes a method whose only param is runtime_id and finds it.
func (tb *table) runtime(c *Call) (Target, error) {
	var p target
	if err := tb.decode(c, &p, &p); err != nil {
		return nil, err
	}
	return tb.sup.Runtime(p.RuntimeID)
}

func (tb *table) status(_ context.Context, c *Call) (any, error) {
	var p target
	if err := tb.decode(c, &p, &p); err != nil {
		return nil, err
	}
	if snap, ok := tb.sup.(Snapshotter); ok && p.RuntimeID == "" {
		return snap.Snapshot(), nil
	}
	rt, err := tb.sup.Runtime(p.RuntimeID)
	if err != nil {
		return nil, err
	}
	return rt.Status(), nil
}

func (tb *table) result(_ context.Context, c *Call) (any, error) {
	rt, err := tb.runtime(c)
	if err != nil {
		return nil, err
	}
	return rt.Result(), nil
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

// page checks the limit and after_seq of history and subscribe: limit's
// default and cap, and no negative after_seq.
func page(n int, afterSeq int64) (int, error) {
	n, err := limit(n)
	if err != nil {
		return 0, err
	}
	if afterSeq < 0 {
		return 0, InvalidParams("after_seq must not be negative")
	}
	return n, nil
}

type historyParams struct {
	target
	Limit    int   `json:"limit"`
	AfterSeq int64 `json:"after_seq"`
}

func (tb *table) history(_ context.Context, c *Call) (any, error) {
	var p historyParams
	if err := tb.decode(c, &p, &p.target); err != nil {
		return nil, err
	}
	rt, err := tb.sup.Runtime(p.RuntimeID)
	if err != nil {
		return nil, err
	}
	n, err := page(p.Limit, p.AfterSeq)
	if err != nil {
		return nil, err
	}
	w := rt.Events()
	latest := w.LatestSeq()
	events := w.History(p.AfterSeq, n)
	out := make([]event.Event, len(events))
	for i, ev := range events {
		out[i] = event.Truncate(ev, event.FinalOutputLimit)
	}
	id := rt.ID()
	if id == "" {
		id = p.RuntimeID
	}
	return map[string]any{"runtime_id": id, "events": out, "latest_seq": latest}, nil
}

type subscribeParams struct {
	target
	Replay   bool  `json:"replay"`
	Limit    int   `json:"limit"`
	AfterSeq int64 `json:"after_seq"`
}

func (tb *table) subscribe(_ context.Context, c *Call) (any, error) {
	var p subscribeParams
	if err := tb.decode(c, &p, &p.target); err != nil {
		return nil, err
	}
	n, err := page(p.Limit, p.AfterSeq)
	if err != nil {
		return nil, err
	}
	if all, ok := tb.sup.(AllSubscriber); ok && p.RuntimeID == "" {
		if p.Replay || p.AfterSeq > 0 {
			return nil, MissingParams("runtime_id")
		}
		all.SubscribeAll(c)
		return map[string]any{"subscribed": true}, nil
	}
	rt, err := tb.sup.Runtime(p.RuntimeID)
	if err != nil {
		return nil, err
	}
	// Replay and subscription are taken atomically; without replay the
	// replay is dropped and only after_seq's filter remains.
	replay, sub := rt.Events().SubscribeWithReplay(p.AfterSeq, n, SubscriberQueue)
	if !p.Replay {
		replay = nil
	}
	// The connection owns the subscription once forwarding starts; the
	// reply is written first so that it precedes the first event.
	c.AfterReply(func() { c.Conn.Forward(replay, sub, p.AfterSeq) })
	return map[string]any{"subscribed": true}, nil
}

func (tb *table) cancel(_ context.Context, c *Call) (any, error) {
	rt, err := tb.runtime(c)
	if err != nil {
		return nil, err
	}
	rt.Cancel()
	return map[string]any{"ok": true}, nil
}

type promptParams struct {
	target
	Text      *string `json:"text"`
	RequestID string  `json:"request_id"`
	KeepQueue bool    `json:"keep_queue"`
}

func (tb *table) doPrompt(ctx context.Context, c *Call, interrupt bool) (any, error) {
	var p promptParams
	if err := tb.decode(c, &p, &p.target); err != nil {
		return nil, err
	}
	if p.Text == nil {
		return nil, MissingParams("text")
	}
	if *p.Text == "" {
		return nil, InvalidParams("text is empty")
	}
	rt, err := tb.sup.Runtime(p.RuntimeID)
	if err != nil {
		return nil, err
	}
	// A prompt the wire cannot carry is refused here, for every runtime.
	if err := sdk.CheckPrompt("text", *p.Text); err != nil {
		return nil, InvalidParams(err.Error())
	}
	if err := rt.Prompt(ctx, *p.Text, interrupt, p.KeepQueue); err != nil {
		return nil, err
	}
	return map[string]any{"accepted": true}, nil
}

func (tb *table) prompt(ctx context.Context, c *Call) (any, error) { return tb.doPrompt(ctx, c, false) }

func (tb *table) interruptAndPrompt(ctx context.Context, c *Call) (any, error) {
	return tb.doPrompt(ctx, c, true)
}

type answerParams struct {
	target
	RequestID string `json:"request_id"`
	OptionID  string `json:"option_id"`
	Message   string `json:"message"`
	// Source is the optional front-door hint (CheckAnswerSource).
	Source string `json:"source"`
}

func (tb *table) answerPermission(_ context.Context, c *Call) (any, error) {
	var p answerParams
	if err := tb.decode(c, &p, &p.target); err != nil {
		return nil, err
	}
	var missing []string
	for _, f := range []struct {
		name, v string
		need    bool
	}{{"runtime_id", p.RuntimeID, tb.opts.RuntimeIDRequired}, {"request_id", p.RequestID, true}, {"option_id", p.OptionID, true}} {
		if f.need && f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, MissingParams(missing...)
	}
	if err := CheckAnswerSource(p.Source); err != nil {
		return nil, err
	}
	rt, err := tb.sup.Runtime(p.RuntimeID)
	if err != nil {
		return nil, err
	}
	// No Pending() check first: the answerer tells "nothing pending" from
	// "already answered" (-32000), which a check here would hide.
	answer := rt.AnswerPermission
	if st, ok := rt.(SourcedTarget); ok && p.Source != "" {
		answer = func(req, opt, msg string) error { return st.AnswerPermissionAs(p.Source, req, opt, msg) }
	}
	if err := answer(p.RequestID, p.OptionID, p.Message); err != nil {
		return nil, err
	}
	return map[string]any{"accepted": true}, nil
}
