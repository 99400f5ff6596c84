package permission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Questions are a runtime's own questions to the user (sdk.QuestionRequest):
// announced as question.request, answered once through any front door
// (answer_question on the control socket, the board, avenor mcp, the file
// handler's <base>.question.response), recorded as question.response. They
// sit beside permission requests but never decide what an agent may do: an
// unanswered question is not a hang but, after its bound, "no answer" to
// the runtime, which goes on.

// Bounds of questions (docs/configuration.md's bounds table).
const (
	// DefaultQuestionTimeout is how long a question waits for an answer
	// before the runtime is told there is none (AVENOR_QUESTION_TIMEOUT).
	DefaultQuestionTimeout = 10 * time.Minute
	// MaxAnswerValueBytes bounds one value of an answer (a chosen option or
	// free text).
	MaxAnswerValueBytes = 16 << 10
	// MaxAnswerValues bounds the values of one prompt's answer (a multi
	// choice).
	MaxAnswerValues = 64
	// MaxQuestionPrompts bounds the prompts of one question; a runtime's
	// question with more is refused (no answer) and reported.
	MaxQuestionPrompts = 32
)

// Errors of answer_question.
var (
	// ErrNoQuestion: an answer names a question that was never asked (or
	// was forgotten, past MaxRememberedAnswers).
	ErrNoQuestion = errors.New("no such question")
	// ErrQuestionExpired: the question waited past its bound, or its turn
	// ended, and the runtime was told there is no answer.
	ErrQuestionExpired = errors.New("question expired")
	// ErrBadQuestionAnswer matches every answer that does not fit its
	// question (also ErrInvalid).
	ErrBadQuestionAnswer = errors.New("answer does not fit the question")
)

// Sources of question.response beyond the permission ones.
const (
	// SourceMCP: answered through avenor mcp's avenor_answer_question.
	SourceMCP = "mcp"
)

// QuestionAnswerSources are the source hints answer_question takes.
var QuestionAnswerSources = []string{SourceControl, SourceBoard, SourceMCP}

// ValidQuestionSource says whether s may be given as answer_question's
// source hint; "" (control) is valid.
func ValidQuestionSource(s string) bool {
	if s == "" {
		return true
	}
	for _, a := range QuestionAnswerSources {
		if s == a {
			return true
		}
	}
	return false
}

// questionBook is a broker's questions: those waiting, and what became of
// the latest ones (answered or expired), so a late answer hears why it is
// refused.
type questionBook struct {
	mu      sync.Mutex
	waiting map[string]*question
	settled map[string]string // request id → "answered" or "expired"
	ring    []string
}

type question struct {
	req     sdk.QuestionRequest
	answers chan questionAnswer // capacity 1: the one answer that takes it
	taken   bool
	expired bool          // given up: taken by nobody
	done    chan struct{} // closed once its question.response is written
}

type questionAnswer struct {
	values [][]string
	source string
}

func (q *questionBook) init() {
	if q.waiting == nil {
		q.waiting, q.settled = map[string]*question{}, map[string]string{}
	}
}

// settle forgets a waiting question, remembering how it ended. q.mu is held.
func (q *questionBook) settle(id, how string) {
	delete(q.waiting, id)
	if _, ok := q.settled[id]; !ok {
		if len(q.ring) >= MaxRememberedAnswers {
			delete(q.settled, q.ring[0])
			q.ring = q.ring[1:]
		}
		q.ring = append(q.ring, id)
	}
	q.settled[id] = how
}

// PendingQuestions returns the questions waiting for an answer, in no order.
func (b *Broker) PendingQuestions() []sdk.QuestionRequest {
	b.qs.mu.Lock()
	defer b.qs.mu.Unlock()
	out := make([]sdk.QuestionRequest, 0, len(b.qs.waiting))
	for _, q := range b.qs.waiting {
		out = append(out, q.req)
	}
	return out
}

// AnswerQuestion delivers answers to the waiting question requestID (source
// "control", or one of QuestionAnswerSources). It refuses, with an error
// that says which, a question never asked (ErrNoQuestion), one already
// answered (ErrAlreadyAnswered), one given up (ErrQuestionExpired), and
// answers that do not fit it (ErrBadQuestionAnswer, ErrInvalid). An answer
// it accepts is delivered once: it returns when its question.response is
// written, or after AnswerSettle.
func (b *Broker) AnswerQuestion(requestID string, answers [][]string, source string) error {
	if !ValidQuestionSource(source) {
		return invalid(ErrBadQuestionAnswer, "answer source %q is not one of %s", source, strings.Join(QuestionAnswerSources, ", "))
	}
	if source == "" {
		source = SourceControl
	}
	b.qs.mu.Lock()
	b.qs.init()
	q := b.qs.waiting[requestID]
	how := b.qs.settled[requestID]
	b.qs.mu.Unlock()
	switch {
	case q == nil && how == "answered":
		return failure(ErrAlreadyAnswered, "question %q was already answered", requestID)
	case q == nil && how == "expired":
		return failure(ErrQuestionExpired, "question %q expired: the runtime was told there is no answer (it waited its bound, or its turn ended); answer the next question it asks", requestID)
	case q == nil:
		return failure(ErrNoQuestion, "no question %q is waiting: see the request_id of the latest question.request", requestID)
	}
	values, err := ValidateQuestionAnswers(q.req.Prompts, answers)
	if err != nil {
		return err
	}
	b.qs.mu.Lock()
	if q.taken {
		expired := q.expired
		b.qs.mu.Unlock()
		if expired {
			return failure(ErrQuestionExpired, "question %q expired: the runtime was told there is no answer (it waited its bound, or its turn ended); answer the next question it asks", requestID)
		}
		return failure(ErrAlreadyAnswered, "question %q was already answered", requestID)
	}
	q.taken = true
	b.qs.mu.Unlock()
	q.answers <- questionAnswer{values: values, source: source}
	t := time.NewTimer(AnswerSettle)
	defer t.Stop()
	select {
	case <-q.done:
	case <-t.C:
	}
	return nil
}

// ValidateQuestionAnswers checks answers against the prompts they answer:
// one answer per prompt, in order; each one value, or for a multi prompt
// one to MaxAnswerValues distinct values; every value non-empty valid UTF-8
// of at most MaxAnswerValueBytes. A value need not be one of the prompt's
// options: runtimes take free text beside their choices ("Other").
func ValidateQuestionAnswers(prompts []sdk.QuestionPrompt, answers [][]string) ([][]string, error) {
	if len(answers) != len(prompts) {
		return nil, invalid(ErrBadQuestionAnswer, "the question has %d prompt(s) but %d answer(s) were given: give one answer per prompt, in order", len(prompts), len(answers))
	}
	out := make([][]string, len(answers))
	for i, vs := range answers {
		p := prompts[i]
		switch {
		case len(vs) == 0:
			return nil, invalid(ErrBadQuestionAnswer, "answer %d is empty: give a value for %q", i+1, sdk.Truncate(p.Question, 80))
		case !p.Multi && len(vs) > 1:
			return nil, invalid(ErrBadQuestionAnswer, "answer %d gives %d values but prompt %q takes one", i+1, len(vs), sdk.Truncate(p.Question, 80))
		case len(vs) > MaxAnswerValues:
			return nil, invalid(ErrBadQuestionAnswer, "answer %d gives %d values, more than %d", i+1, len(vs), MaxAnswerValues)
		}
		seen := map[string]bool{}
		for _, v := range vs {
			switch {
			case strings.TrimSpace(v) == "":
				return nil, invalid(ErrBadQuestionAnswer, "answer %d has an empty value", i+1)
			case len(v) > MaxAnswerValueBytes:
				return nil, invalid(ErrBadQuestionAnswer, "answer %d has a value of %d bytes, more than %d", i+1, len(v), MaxAnswerValueBytes)
			case !utf8.ValidString(v):
				return nil, invalid(ErrBadQuestionAnswer, "answer %d is not valid UTF-8", i+1)
			case seen[v]:
				return nil, invalid(ErrBadQuestionAnswer, "answer %d gives %q twice", i+1, sdk.Truncate(v, 80))
			}
			seen[v] = true
		}
		out[i] = append([]string(nil), vs...)
	}
	return out, nil
}

// ParseQuestionAnswers reads answers as JSON: an array with one entry per
// prompt, each a string (one value) or an array of strings (a multi
// choice), e.g. ["blue", ["a", "b"]].
func ParseQuestionAnswers(raw json.RawMessage) ([][]string, error) {
	raw = bytes.TrimSpace(raw)
	var items []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, invalid(ErrBadQuestionAnswer, `answers must be a JSON array with one entry per prompt, each a string or an array of strings, e.g. ["blue", ["a", "b"]]`)
	}
	out := make([][]string, len(items))
	for i, it := range items {
		var s string
		if err := json.Unmarshal(it, &s); err == nil {
			out[i] = []string{s}
			continue
		}
		var ss []string
		if err := json.Unmarshal(it, &ss); err != nil {
			return nil, invalid(ErrBadQuestionAnswer, "answer %d is neither a string nor an array of strings", i+1)
		}
		out[i] = ss
	}
	return out, nil
}

// QuestionRequestEvent is the question.request event
// (docs/events.md#questionrequest): the backend's raw fields, then
// request_id, prompts, resolver and timeout_ms.
func QuestionRequestEvent(req sdk.QuestionRequest, resolver string, timeout time.Duration) event.Event {
	ev := event.Event{}
	for k, v := range req.Fields {
		ev[k] = v
	}
	prompts := make([]any, len(req.Prompts))
	for i, p := range req.Prompts {
		m := map[string]any{"question": p.Question}
		if len(p.Options) > 0 {
			opts := make([]any, len(p.Options))
			for j, o := range p.Options {
				opts[j] = o
			}
			m["options"] = opts
		}
		if p.Multi {
			m["multi"] = true
		}
		if p.Header != "" {
			m["header"] = p.Header
		}
		prompts[i] = m
	}
	ev[event.KeyEvent] = string(event.TypeQuestionRequest)
	ev["request_id"] = req.ID
	ev["prompts"] = prompts
	ev["resolver"] = resolver
	ev["timeout_ms"] = timeout.Milliseconds()
	return ev
}

// questionResponseEvent is question.response (docs/events.md#questionresponse):
// answers when answered, else the reason it was given up.
func questionResponseEvent(id string, a sdk.QuestionAnswer, source, reason string) event.Event {
	ev := event.Event{event.KeyEvent: string(event.TypeQuestionResponse), "request_id": id, "answered": a.Answered, "source": source}
	if a.Answered {
		answers := make([]any, len(a.Answers))
		for i, vs := range a.Answers {
			l := make([]any, len(vs))
			for j, v := range vs {
				l[j] = v
			}
			answers[i] = l
		}
		ev["answers"] = answers
	} else {
		ev["reason"] = reason
	}
	return ev
}

// Resolvers a question.request names beyond the permission ones.
const (
	// ResolverControl: a control client is connected (or the board, or
	// avenor mcp) and may answer.
	ResolverControl = "control"
)

// questionTimeout is the broker's bound on one question.
func (b *Broker) questionTimeout() time.Duration {
	if b.opts.QuestionTimeout > 0 {
		return b.opts.QuestionTimeout
	}
	return DefaultQuestionTimeout
}

// RecordQuestion announces req — one question.request, emitted before it
// returns, so it keeps its place in the stream — and returns the function
// that waits for its answer: the first valid answer through any front door,
// or, past the broker's bound or when ctx ends, "no answer" (Answered
// false). Every outcome is one question.response. It never fails the
// attempt: a question is not a permission, and nothing is allowed by its
// answer but what the runtime itself does with it.
func (s *Session) RecordQuestion(ctx context.Context, req sdk.QuestionRequest, emit func(event.Event)) func(context.Context) (sdk.QuestionAnswer, error) {
	b := s.b
	timeout := b.questionTimeout()
	noAnswer := func(context.Context) (sdk.QuestionAnswer, error) { return sdk.QuestionAnswer{}, nil }
	var refuse string
	switch {
	case req.ID == "":
		refuse = "question.request missing request_id; the runtime is told there is no answer"
	case len(req.Prompts) == 0:
		refuse = fmt.Sprintf("question %s has no prompt; the runtime is told there is no answer", req.ID)
	case len(req.Prompts) > MaxQuestionPrompts:
		refuse = fmt.Sprintf("question %s has %d prompts, more than %d; the runtime is told there is no answer", req.ID, len(req.Prompts), MaxQuestionPrompts)
	}
	b.qs.mu.Lock()
	b.qs.init()
	if refuse == "" {
		if _, dup := b.qs.waiting[req.ID]; dup {
			refuse = fmt.Sprintf("question %s is already waiting; the second one is told there is no answer", req.ID)
		}
	}
	q := &question{req: req, answers: make(chan questionAnswer, 1), done: make(chan struct{})}
	if refuse == "" {
		b.qs.waiting[req.ID] = q
	}
	control := b.control
	b.qs.mu.Unlock()
	if refuse != "" {
		emit(QuestionRequestEvent(req, ResolverNone, 0))
		ev := errorEvent(refuse)
		ev["source"] = "question"
		emit(ev)
		return noAnswer
	}

	resolver := ResolverNone
	switch {
	case control != nil && control.Connected():
		resolver = ResolverControl
	case b.file != nil:
		resolver = ResolverFile
	}
	emit(QuestionRequestEvent(req, resolver, timeout))
	if resolver == ResolverNone && b.opts.OnQuestionUnanswered != nil {
		b.opts.OnQuestionUnanswered(req, timeout)
	}
	return func(ctx context.Context) (sdk.QuestionAnswer, error) {
		a, source, reason := s.awaitQuestion(ctx, q, timeout, emit)
		emit(questionResponseEvent(req.ID, a, source, reason))
		b.qs.mu.Lock()
		how := "answered"
		if !a.Answered {
			how = "expired"
		}
		b.qs.settle(req.ID, how)
		b.qs.mu.Unlock()
		close(q.done)
		return a, nil
	}
}

// awaitQuestion waits for q's answer: through AnswerQuestion, or from the
// file handler while a file base is set. Past timeout, or when ctx ends, the
// question is given up (it can no longer be taken).
func (s *Session) awaitQuestion(ctx context.Context, q *question, timeout time.Duration, emit func(event.Event)) (sdk.QuestionAnswer, string, string) {
	b := s.b
	t := time.NewTimer(timeout)
	defer t.Stop()
	var fromFile chan fileQuestionResult
	if b.file != nil {
		fctx, cancel := context.WithCancel(ctx)
		defer cancel()
		fromFile = make(chan fileQuestionResult, 1)
		h := b.file.warnTo(func(msg string) {
			ev := warningEvent(msg)
			ev["source"] = "question"
			ev["request_id"] = q.req.ID
			emit(ev)
		})
		go func() {
			v, err := h.askQuestion(fctx, NewFileQuestion(q.req, s.sessionIDOf(q.req)))
			fromFile <- fileQuestionResult{v, err}
		}()
	}
	giveUp := func(reason string) (sdk.QuestionAnswer, string, string) {
		b.qs.mu.Lock()
		taken := q.taken
		q.taken, q.expired = true, !taken
		b.qs.mu.Unlock()
		if taken { // an answer was accepted at the last moment: it decides
			a := <-q.answers
			return sdk.QuestionAnswer{Answered: true, Answers: a.values}, a.source, ""
		}
		return sdk.QuestionAnswer{}, SourceAvenor, reason
	}
	for {
		select {
		case a := <-q.answers:
			return sdk.QuestionAnswer{Answered: true, Answers: a.values}, a.source, ""
		case r := <-fromFile:
			fromFile = nil
			if r.err != nil {
				if ctx.Err() == nil {
					ev := warningEvent("question file handler: " + r.err.Error())
					ev["source"] = "question"
					ev["request_id"] = q.req.ID
					emit(ev)
				}
				continue
			}
			b.qs.mu.Lock()
			taken := q.taken
			q.taken = true
			b.qs.mu.Unlock()
			if taken {
				continue // an answer through the socket won: it is on q.answers
			}
			return sdk.QuestionAnswer{Answered: true, Answers: r.values}, SourceFile, ""
		case <-t.C:
			return giveUp("timeout")
		case <-ctx.Done():
			return giveUp("ended")
		}
	}
}

// sessionIDOf is the session a .question names (as sessionID for a .req).
func (s *Session) sessionIDOf(req sdk.QuestionRequest) string {
	if id, ok := req.Fields[event.KeySessionID].(string); ok && id != "" {
		return id
	}
	return s.sessionID(sdk.PermissionRequest{})
}

// QuestionNote is what a person is told, once, when a question waits with
// nobody set up to answer it: what is asked and how long it waits before the
// runtime goes on without an answer.
func QuestionNote(req sdk.QuestionRequest, timeout time.Duration, controlSocket string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "avenor: the agent asks a question (%s) and nothing is set up to answer it; in %s it gets no answer and goes on\n", req.ID, timeout)
	for _, p := range req.Prompts {
		fmt.Fprintf(&sb, "  asks: %s\n", strings.ReplaceAll(p.Question, "\n", " "))
		if len(p.Options) > 0 {
			fmt.Fprintf(&sb, "  options: %s\n", strings.ReplaceAll(strings.Join(p.Options, ", "), "\n", " "))
		}
	}
	if controlSocket != "" {
		fmt.Fprintf(&sb, "  answer it: avenor control --socket %s answer-question %s '<answers JSON array>'\n", quote(controlSocket), quote(req.ID))
	} else {
		sb.WriteString("  to answer questions, run with --control-socket or --sentinel-file (then: avenor answer --question <id> --answer <value> <base>.perm)\n")
	}
	return sb.String()
}
