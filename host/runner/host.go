package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/permission"
	"github.com/avenor-go/avenor/host/sandbox"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// sessionHost is the runtime.Host one attempt's session calls back into: it
// stamps and writes plugin events, tracks activity for the progress
// watchdog, synthesises final output, and hands permission requests to the
// broker in stream order.
type sessionHost struct {
	// write is the run the events go to (a Runner); nil after session.end
	// and while parked.
	write       eventSink
	logger      hclog.Logger
	permissions Permissions
	final       *event.FinalOutput

	// activity gets a non-blocking tick for every event (progress watchdog).
	activity chan struct{}
	// fatal carries a broker failure that must end the attempt.
	fatal chan error

	mu        sync.Mutex
	proc      sdk.ProcessInfo
	onProcess func(sdk.ProcessInfo) // the status snapshot's pid
	onError   func(msg string)      // a plugin's avenor.error, for stderr
	// questions: the session was opened to hear its runtime's questions
	// (Options.Questions); without it a question is never announced.
	questions bool
	// denied reads the tools' output for what the sandbox refused; nil
	// without a sandbox (setSandbox).
	denied *denials
	// proxy is the runtime's filtering proxy (--sandbox-network model or
	// allow=… under bubblewrap); nil without one (netproxy.go).
	proxy *sandbox.Proxy
}

// setQuestions records whether the session hears questions.
func (h *sessionHost) setQuestions(on bool) {
	h.mu.Lock()
	h.questions = on
	h.mu.Unlock()
}

// eventSink is where a session's events are stamped and written: the
// Runner that owns the session now.
type eventSink interface {
	// write stamps and writes ev; owned: ev is handed over (Runner.write).
	write(ev event.Event, owned bool) event.Event
	// writeFields stamps and writes a plugin event that arrived as JSON
	// (Runner.writeFields).
	writeFields(f *event.Fields)
}

func newSessionHost(write eventSink, logger hclog.Logger, p Permissions) *sessionHost {
	return &sessionHost{
		write: write, logger: logger, permissions: p, final: &event.FinalOutput{},
		activity: make(chan struct{}, 1), fatal: make(chan error, 1),
	}
}

// emit writes a host event.
func (h *sessionHost) emit(ev event.Event) { h.emitEvent(ev, false) }

// emitEvent writes a host or plugin event; owned as in Runner.write.
func (h *sessionHost) emitEvent(ev event.Event, owned bool) {
	h.mu.Lock()
	write := h.write
	h.mu.Unlock()
	if write == nil {
		// After session.end, or a kept session between runs
		// (Options.KeepSession): no turn owns the stream, whose last event
		// must stay the session.end.
		h.logger.Warn("an event after session.end is not written to the log", "event", ev.Type(), "source", ev["source"], "message", ev["message"])
		return
	}
	if ev.Type() == event.TypeSessionEnd {
		// session.end is the last event of the attempt: whatever the
		// plugin's goroutines still report (a decision that could not be
		// delivered to a plugin that just died…) goes to the log instead.
		h.mu.Lock()
		h.write = nil
		h.mu.Unlock()
	}
	stamped := write.write(ev, owned)
	h.final.Observe(stamped)
	h.tick()
}

// tick tells the progress watchdog an event arrived.
func (h *sessionHost) tick() {
	select {
	case h.activity <- struct{}{}:
	default:
	}
}

// EmitJSON implements sdk.JSONEmitter: sdk/plugin hands over each plugin
// event as it crossed the wire, its type and the JSON object of its
// fields. Fields that are in canonical form are never decoded: the few
// the host reads are scanned, and the line is stamped by splicing
// (event.Writer.WriteFields, so the event path decodes nothing). Any other bytes are decoded into
// a map and go the way of Emit, exactly as before.
func (h *sessionHost) EmitJSON(typ sdk.EventType, data []byte) {
	f, ok := event.ScanFields(typ, data)
	if !ok {
		var m map[string]any
		if len(data) > 0 {
			if err := json.Unmarshal(data, &m); err != nil {
				h.logger.Error("dropping a malformed event from the plugin", "error", fmt.Errorf("event %q: not a JSON object: %w", typ, err))
				return
			}
		}
		h.Emit(sdk.Event{Type: typ, Fields: m})
		return
	}
	defer f.Release()
	if typ == event.TypeError {
		h.mu.Lock()
		say := h.onError
		h.mu.Unlock()
		if msg, _ := f.Str("message"); say != nil && len(msg) > 0 {
			say(string(msg))
		}
	}
	h.mu.Lock()
	write := h.write
	if write != nil && typ == event.TypeSessionEnd {
		h.write = nil // as in emitEvent
	}
	h.mu.Unlock()
	if write == nil {
		source, _ := f.Str("source")
		src := string(source)
		message, _ := f.Str("message")
		h.logger.Warn("an event after session.end is not written to the log", "event", typ, "source", src, "message", string(message))
		return
	}
	write.writeFields(f)
	h.final.ObserveFields(f)
	h.tick()
	h.emitDenied(h.deniedOf().fromJSON(typ, data))
}

// Emit implements sdk.Host for plugin events. It takes ev.Fields over and
// stamps it in place: sdk/plugin hands it a map freshly decoded for this
// event alone, and under a flood every copy of it counts.
func (h *sessionHost) Emit(ev sdk.Event) {
	out := event.Event(ev.Fields)
	if out == nil {
		out = event.Event{}
	}
	out["event"] = string(ev.Type)
	if ev.Type == event.TypeError {
		h.mu.Lock()
		say := h.onError
		h.mu.Unlock()
		if msg, _ := out["message"].(string); say != nil && msg != "" {
			say(msg)
		}
	}
	// Read before the event is handed over: the writer stamps it in place.
	denied := h.deniedOf().fromFields(ev.Type, out)
	h.emitEvent(out, true)
	h.emitDenied(denied)
}

// setOnError routes the plugin's avenor.error messages to say (the run
// that owns the session now).
func (h *sessionHost) setOnError(say func(string)) {
	h.mu.Lock()
	h.onError = say
	h.mu.Unlock()
}

// AskPermission implements sdk.Host; the plugin client prefers RecordPermission.
func (h *sessionHost) AskPermission(ctx context.Context, req sdk.PermissionRequest) (sdk.PermissionDecision, error) {
	return h.RecordPermission(ctx, req)(ctx)
}

// RecordPermission implements sdk.PermissionRecorder.
func (h *sessionHost) RecordPermission(ctx context.Context, req sdk.PermissionRequest) func(context.Context) (sdk.PermissionDecision, error) {
	h.mu.Lock()
	perms := h.permissions
	h.mu.Unlock()
	if perms == nil {
		return func(context.Context) (sdk.PermissionDecision, error) { return sdk.PermissionDecision{}, errNoRun }
	}
	wait := perms.Record(ctx, req, h.emit)
	return func(ctx context.Context) (sdk.PermissionDecision, error) {
		d, err := wait(ctx)
		if err != nil && ctx.Err() == nil {
			// The broker failed (file handler timeout, bad response…): the
			// attempt fails; nothing is ever allowed by default.
			select {
			case h.fatal <- err:
			default:
			}
		}
		return d, err
	}
}

// Questions hears a session's questions; host/permission's Session
// implements it beside Permissions.
type Questions interface {
	RecordQuestion(ctx context.Context, req sdk.QuestionRequest, emit func(event.Event)) func(context.Context) (sdk.QuestionAnswer, error)
}

// AskQuestion implements sdk.QuestionAsker; the plugin client prefers
// RecordQuestion.
func (h *sessionHost) AskQuestion(ctx context.Context, req sdk.QuestionRequest) (sdk.QuestionAnswer, error) {
	return h.RecordQuestion(ctx, req)(ctx)
}

// RecordQuestion implements sdk.QuestionRecorder: the question goes to the
// run's broker, which announces it in stream order; a session no run owns,
// or a broker that cannot hear questions, answers "no answer" at once.
func (h *sessionHost) RecordQuestion(ctx context.Context, req sdk.QuestionRequest) func(context.Context) (sdk.QuestionAnswer, error) {
	h.mu.Lock()
	q, ok := h.permissions.(Questions)
	on := h.questions
	h.mu.Unlock()
	if !ok || !on { // a run that did not ask for questions never sees one
		return func(context.Context) (sdk.QuestionAnswer, error) { return sdk.QuestionAnswer{}, nil }
	}
	return q.RecordQuestion(ctx, req, h.emit)
}

// RecordProcess implements sdk.ProcessRecorder.
func (h *sessionHost) RecordProcess(p sdk.ProcessInfo) {
	h.mu.Lock()
	h.proc = p
	onProcess := h.onProcess
	h.mu.Unlock()
	if onProcess != nil {
		onProcess(p)
	}
}

func (h *sessionHost) process() sdk.ProcessInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.proc
}

// Logger implements sdk.Host.
func (h *sessionHost) Logger() hclog.Logger { return h.logger }

// errNoRun answers a permission request of a kept session between runs.
var errNoRun = errors.New("no run owns this session now: it is kept open between runs")

// rebind hands the session to another run: its events, permission requests
// and process reports go to that run from now on (Options.Held).
func (h *sessionHost) rebind(write eventSink, p Permissions, onProcess func(sdk.ProcessInfo)) {
	h.mu.Lock()
	h.write, h.permissions, h.onProcess = write, p, onProcess
	h.mu.Unlock()
	h.final.Reset()
	for { // a signal left by the previous run is not this run's
		select {
		case <-h.activity:
			continue
		case <-h.fatal:
			continue
		default:
		}
		return
	}
}

// reopen lets the session write again after the session.end of a turn that
// another turn of the same attempt follows (docs/run.md#multi-turn). Unlike rebind it keeps
// a pending fatal signal: a plugin that died between the turns must still
// end the next one.
func (h *sessionHost) reopen(write eventSink) {
	h.mu.Lock()
	h.write = write
	h.mu.Unlock()
}

// park detaches the session from its run (Options.KeepSession): until a
// run rebinds it, events are dropped and permission requests refused.
func (h *sessionHost) park() { h.rebind(nil, nil, nil) }

// PermissionUndelivered implements sdk.DeliveryReporter: the broker's
// session says so with an avenor.error carrying the delivery state.
func (h *sessionHost) PermissionUndelivered(requestID string, d sdk.PermissionDecision, delivery string, cause error) {
	if u, ok := h.permissions.(interface {
		Undelivered(string, sdk.PermissionDecision, permission.Delivery, error)
	}); ok {
		u.Undelivered(requestID, d, permission.Delivery(delivery), cause)
		return
	}
	h.logger.Error("a permission decision was not delivered", "request_id", requestID, "delivery", delivery, "error", cause)
}
