package permission

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Options configures a Broker. The zero value resolves nothing: every
// request waits (resolver "none") until its turn ends.
type Options struct {
	// AutoApprove answers ordinary requests at once with an allow-kind
	// option — allow_once when offered, else the first (source "avenor"); never requests that require user
	// input, nor requests offering no allow option. Default false.
	AutoApprove bool
	// FileBase turns on the file handler on <FileBase>.req /
	// <FileBase>.req.response; see FileBase for how a run derives it.
	// Default "": no file handler.
	FileBase string
	// File tunes the file handler; the zero value is the contract's 500 ms
	// poll and 10 min timeout.
	File FileOptions
	// Control is the control plane's resolver; nil: no control step (see
	// also SetControl).
	Control ControlResolver
	// ClaimTimeout bounds how long a request held by the control plane
	// waits before it falls through to the file handler or none; 0: no
	// deadline (it falls through only when every client disconnects).
	ClaimTimeout time.Duration
	// CancelRun cancels the whole run (stop reason cancelled, exit 130); the
	// broker calls it when an answer's outcome is cancelled, before the
	// cancelled decision goes back to the plugin. nil: only the plugin
	// learns of it.
	CancelRun func()
	// SessionID returns the session id written in a .req whose request
	// carries no session_id field; nil: the id given to Session.
	SessionID func() string
	// Unanswered is what happens to a request that reaches "none" in the
	// precedence: UnansweredWait (default, also ""), UnansweredDeny or
	// UnansweredFail (--on-permission).
	Unanswered string
	// OnUnanswered, when set, is called once for each request left waiting
	// with nobody to answer it (Unanswered wait), so the user can be told
	// (UnansweredNote). It must return quickly. Default nil.
	OnUnanswered func(sdk.PermissionRequest)
	// Ask, when set, is the last resolver: a person at the run's terminal.
	// A request that reaches "none" under UnansweredWait is given to Ask
	// while a late control answer may still arrive; the answer Ask returns
	// is the decision, with source "tty". Ask must return once ctx is done;
	// an error leaves the request waiting as without Ask. Default nil.
	Ask func(ctx context.Context, req sdk.PermissionRequest) (Answer, error)
	// Mode is the run's permission mode; it decides, before every other
	// resolver, what it allows or denies (modeDecision). Default "": no
	// mode, the precedence exactly as without one.
	Mode sdk.PermissionMode
	// QuestionTimeout bounds how long a runtime's question waits for an
	// answer before the runtime is told there is none; default
	// DefaultQuestionTimeout.
	QuestionTimeout time.Duration
	// OnQuestionUnanswered, when set, is called once for each question
	// asked with nothing set up to answer it (QuestionNote), with its
	// bound. It must return quickly. Default nil.
	OnQuestionUnanswered func(req sdk.QuestionRequest, timeout time.Duration)
}

// Broker resolves the permission requests of one runtime's sessions in the
// precedence of docs/permission-handler.md#precedence: the permission mode →
// auto-approve → the control plane (when it
// takes the request) → the file handler → none (where Options.Ask, a
// person at the terminal, may answer). It is safe for concurrent
// use.
type Broker struct {
	opts Options
	file *FileHandler

	mu      sync.Mutex
	control ControlResolver
	pending map[string]*pending // by request id, every session
	// answered remembers the latest MaxRememberedAnswers requests that were
	// decided by an answer, so a second answer_permission after the
	// decision hears "already answered" rather than "nothing pending".
	answered     map[string]struct{}
	answeredRing []string

	qs questionBook // the runtime's questions (question.go)
}

// MaxRememberedAnswers bounds how many answered request ids a broker
// remembers, per runtime, to refuse a second answer as already answered.
const MaxRememberedAnswers = 256

// pending is one request waiting for its decision.
// AnswerSettle bounds how long Broker.Answer waits for the answer it
// delivered to be written as the decision (its permission.response).
const AnswerSettle = 2 * time.Second

type pending struct {
	req     sdk.PermissionRequest
	session *Session
	// answers carries Broker.Answer's answer (control / direct delivery).
	answers chan Answer
	// taken is set, under Broker.mu, by the one answer that decides the
	// request (Broker.Answer's or the file handler's); every later answer
	// is refused as already answered, never accepted and dropped.
	taken bool
	// decided is closed once an answer Broker.Answer sent has become the
	// decision and its permission.response is written.
	decided chan struct{}
}

// New returns a broker configured by o.
func New(o Options) *Broker {
	b := &Broker{opts: o, control: o.Control, pending: map[string]*pending{}, answered: map[string]struct{}{}}
	if o.FileBase != "" {
		b.file = NewFileHandler(o.FileBase, o.File)
	}
	return b
}

// SetControl plugs the control plane in (or out, with nil) for requests
// that arrive from now on.
func (b *Broker) SetControl(c ControlResolver) {
	b.mu.Lock()
	b.control = c
	b.mu.Unlock()
}

// Session returns the resolver of one session; sessionID may be empty when
// it is not known yet (see Options.SessionID).
func (b *Broker) Session(sessionID string) *Session {
	return &Session{b: b, id: sessionID}
}

// ModeSession is Session under mode rather than the broker's Options.Mode:
// a loop or team phase that sets its own permission mode.
func (b *Broker) ModeSession(sessionID string, mode sdk.PermissionMode) *Session {
	return &Session{b: b, id: sessionID, mode: mode}
}

// Answer delivers an answer to a pending request (source "control", or
// a.Source when it is one of AnswerSources),
// whichever resolver announced it: a control client's answer_permission,
// including a late one after the request fell through (docs/permission-handler.md#precedence). It
// returns an ErrInvalid error for an answer the request does not accept,
// ErrAlreadyAnswered when another answer (a control client's or the file
// handler's) decided it or is on its way, and ErrNotPending when no such
// request waits. An answer it accepts is the decision.
func (b *Broker) Answer(requestID string, a Answer) error {
	b.mu.Lock()
	p := b.pending[requestID]
	_, done := b.answered[requestID]
	b.mu.Unlock()
	switch {
	case p == nil && done:
		return alreadyAnswered(requestID)
	case p == nil:
		return fmt.Errorf("%w: %q", ErrNotPending, requestID)
	}
	if !ValidAnswerSource(a.Source) {
		return failure(ErrInvalid, "answer source %q is not one of %s", a.Source, strings.Join(AnswerSources, ", "))
	}
	a, err := ValidateAnswer(a, p.req.Options)
	if err != nil {
		return err
	}
	if !b.take(p) {
		return alreadyAnswered(requestID)
	}
	p.answers <- a // the only send: take admits one answer
	// The caller is told "answered" once the decision is written, so that
	// what it reads next (status, result, the log) no longer shows the
	// request pending. A request whose run ended meanwhile never decides:
	// the wait is bounded.
	t := time.NewTimer(AnswerSettle)
	defer t.Stop()
	select {
	case <-p.decided:
	case <-t.C:
	}
	return nil
}

// decideAnswered decides p with the answer Broker.Answer sent and tells
// Answer that its permission.response is written.
func (s *Session) decideAnswered(p *pending, a Answer, source string, emit func(event.Event)) sdk.PermissionDecision {
	d := s.decide(p.req, a, source, emit)
	close(p.decided)
	return d
}

// take claims p for the answer about to decide it; false when another
// answer already did.
func (b *Broker) take(p *pending) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p.taken {
		return false
	}
	p.taken = true
	return true
}

func alreadyAnswered(requestID string) error {
	return failure(ErrAlreadyAnswered, "permission %q was already answered", requestID)
}

// Pending returns the requests waiting for a decision, in no order.
func (b *Broker) Pending() []sdk.PermissionRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]sdk.PermissionRequest, 0, len(b.pending))
	for _, p := range b.pending {
		out = append(out, p.req)
	}
	return out
}

// Session resolves the requests of one session, one at a time. It
// implements host/runner's Permissions.
type Session struct {
	b  *Broker
	id string
	// mode, when set, replaces the broker's Options.Mode (ModeSession).
	mode sdk.PermissionMode

	mu   sync.Mutex
	cur  *pending
	emit func(event.Event) // of the latest request, for Undelivered
}

// Record announces req — emitting exactly one permission.request, before it
// returns, so the request stays in stream order after the tool call it
// belongs to — and returns the function that waits for its decision. The
// caller must call that function once. A decision is also a
// permission.response event; a failure of the file handler, and a second
// request while one is pending, are errors that fail the attempt; a done
// ctx returns ctx.Err() and a cancelled decision. Nothing is ever allowed
// by default.
func (s *Session) Record(ctx context.Context, req sdk.PermissionRequest, emit func(event.Event)) func(context.Context) (sdk.PermissionDecision, error) {
	b := s.b
	s.mu.Lock()
	s.emit = emit
	s.mu.Unlock()
	if req.ID == "" {
		// Nobody could answer it: say so, and leave the backend waiting
		// until the turn ends, as the original did.
		emit(RequestEvent(req, ResolverNone))
		emit(errorEvent(ErrMissingRequestID.Error()))
		return waitForCtx
	}
	if d, ok := s.byMode(req, emit); ok {
		return func(context.Context) (sdk.PermissionDecision, error) { return d, nil }
	}
	if b.opts.AutoApprove && !req.RequiresUserInput {
		if opt, ok := preferredAllow(req.Options); ok {
			// Decided here and now: it never occupies the session's slot.
			emit(RequestEvent(req, ResolverAutomatic))
			d := s.decide(req, Answer{Outcome: sdk.OutcomeSelected, OptionID: opt.ID}, SourceAvenor, emit)
			return func(context.Context) (sdk.PermissionDecision, error) { return d, nil }
		}
	}

	p := &pending{req: req, session: s, answers: make(chan Answer, 1), decided: make(chan struct{})}
	s.mu.Lock()
	busy := s.cur != nil
	if !busy {
		s.cur = p
	}
	s.mu.Unlock()
	if busy {
		emit(RequestEvent(req, ResolverNone))
		return func(context.Context) (sdk.PermissionDecision, error) {
			return cancelled(), ErrAlreadyPending
		}
	}

	b.mu.Lock()
	control := b.control
	b.pending[req.ID] = p
	b.mu.Unlock()
	resolver := ResolverNone
	switch {
	case takes(control):
		resolver = ResolverReserved
	case b.file != nil:
		resolver = ResolverFile
	}

	if resolver == ResolverNone {
		// The policy may answer at once: the request event, with the
		// resolver that says so, goes out before Record returns.
		d, settled, err := s.unansweredNow(p, emit)
		if settled {
			s.release(p)
			return func(context.Context) (sdk.PermissionDecision, error) { return d, err }
		}
		return func(ctx context.Context) (sdk.PermissionDecision, error) {
			defer s.release(p)
			return s.unanswered(ctx, p, true, emit)
		}
	}
	ev := RequestEvent(req, resolver)
	emit(ev)
	return func(ctx context.Context) (sdk.PermissionDecision, error) {
		defer s.release(p)
		return s.resolve(ctx, p, ev, resolver, control, emit)
	}
}

// resolve runs the steps after auto-approve: the control plane when it took
// the request, then the file handler, then none. An answer through
// Broker.Answer is taken at every step.
func (s *Session) resolve(ctx context.Context, p *pending, ev event.Event, resolver string, control ControlResolver, emit func(event.Event)) (sdk.PermissionDecision, error) {
	b := s.b
	if resolver == ResolverReserved {
		var claim <-chan time.Time
		if b.opts.ClaimTimeout > 0 {
			t := time.NewTimer(b.opts.ClaimTimeout)
			defer t.Stop()
			claim = t.C
		}
		select {
		case a := <-p.answers:
			return s.decideAnswered(p, a, SourceControl, emit), nil
		case <-ctx.Done():
			return cancelled(), ctx.Err()
		case <-claim:
		case <-control.Disconnected():
		}
	}

	if b.file != nil {
		return s.askFile(ctx, p, ev, emit)
	}
	// Fell through from the control step: nobody is left to answer.
	return s.unanswered(ctx, p, true, emit)
}

type fileResult struct {
	a   Answer
	err error
}

// askFile runs the file handler, while a control answer may still arrive.
func (s *Session) askFile(ctx context.Context, p *pending, ev event.Event, emit func(event.Event)) (sdk.PermissionDecision, error) {
	fr := NewFileRequest(p.req, s.sessionID(p.req), ev)
	if fr.SessionID != "" {
		payload := make(map[string]any, len(ev)+1)
		for k, v := range ev {
			payload[k] = v
		}
		if _, ok := payload[event.KeySessionID]; !ok {
			payload[event.KeySessionID] = fr.SessionID
		}
		fr.Payload = payload
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan fileResult, 1)
	h := s.b.file.warnTo(func(msg string) {
		ev := warningEvent(msg)
		ev["request_id"] = p.req.ID
		emit(ev)
	})
	go func() {
		a, err := h.Ask(fctx, fr)
		done <- fileResult{a, err}
	}()
	select {
	case r := <-done:
		switch {
		case ctx.Err() != nil:
			return cancelled(), ctx.Err()
		case r.err != nil:
			return cancelled(), r.err
		case !s.b.take(p):
			// A control answer was accepted while the file was read: it
			// decides, as its client was told.
			return s.decideAnswered(p, <-p.answers, SourceControl, emit), nil
		}
		return s.decide(p.req, r.a, SourceFile, emit), nil
	case a := <-p.answers:
		cancel()
		<-done // the handler removes its .req: the request is answered
		return s.decideAnswered(p, a, SourceControl, emit), nil
	}
}

// decide turns a valid answer into the plugin's decision and its
// permission.response; a cancelled answer also cancels the run.
func (s *Session) decide(req sdk.PermissionRequest, a Answer, source string, emit func(event.Event)) sdk.PermissionDecision {
	if a.Source != "" { // Broker.Answer's hint: which front door the person used
		source = a.Source
	}
	if a.Outcome == sdk.OutcomeCancelled {
		emit(cancelledResponseEvent(req.ID, a.OptionID, source))
		if s.b.opts.CancelRun != nil {
			s.b.opts.CancelRun()
		}
		return sdk.PermissionDecision{Outcome: sdk.OutcomeCancelled, OptionID: a.OptionID, Message: a.Message}
	}
	kind := ""
	for _, o := range req.Options {
		if o.ID == a.OptionID {
			kind = o.Kind
			break
		}
	}
	emit(ResponseEvent(req.ID, a.OptionID, kind, source))
	return sdk.PermissionDecision{Outcome: sdk.OutcomeSelected, OptionID: a.OptionID, Kind: sdk.DecisionKind(kind), Message: a.Message}
}

// release frees the session's slot once the request is decided.
func (s *Session) release(p *pending) {
	s.mu.Lock()
	if s.cur == p {
		s.cur = nil
	}
	s.mu.Unlock()
	s.b.mu.Lock()
	if s.b.pending[p.req.ID] == p {
		delete(s.b.pending, p.req.ID)
		if p.taken {
			s.b.remember(p.req.ID)
		}
	}
	s.b.mu.Unlock()
}

// remember records an answered request id, forgetting the oldest past
// MaxRememberedAnswers. b.mu is held.
func (b *Broker) remember(id string) {
	if _, ok := b.answered[id]; ok {
		return
	}
	if len(b.answeredRing) >= MaxRememberedAnswers {
		delete(b.answered, b.answeredRing[0])
		b.answeredRing = b.answeredRing[1:]
	}
	b.answered[id] = struct{}{}
	b.answeredRing = append(b.answeredRing, id)
}

// sessionID is the session a .req names: the request's own session_id
// field, else Options.SessionID, else the id the session was made with.
func (s *Session) sessionID(req sdk.PermissionRequest) string {
	if id, ok := req.Fields[event.KeySessionID].(string); ok && id != "" {
		return id
	}
	if s.b.opts.SessionID != nil {
		if id := s.b.opts.SessionID(); id != "" {
			return id
		}
	}
	return s.id
}

func cancelled() sdk.PermissionDecision {
	return sdk.PermissionDecision{Outcome: sdk.OutcomeCancelled}
}

func waitForCtx(ctx context.Context) (sdk.PermissionDecision, error) {
	<-ctx.Done()
	return cancelled(), ctx.Err()
}
