package ochttp

import (
	"context"
	"encoding/json"
	"errors"

	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/turn"
)

// turnQueue bounds the events queued for a turn; the SSE reader waits
// when the turn falls behind.
const turnQueue = 1024

func errorf(format string, args ...any) *runtime.Error {
	return runtime.Errorf(runtime.FaultRuntime, Name+": "+format, args...)
}

// session is one OpenCode session on one server.
type session struct {
	c       *client
	host    runtime.Host
	log     hclog.Logger
	id      string
	version string
	agent   string
	model   *modelRef
	srv     *ownServer // nil with a server URL

	unknown    atomic.Int64
	stopEvents context.CancelFunc
	eventsDone chan struct{}

	// What earlier turns saw, so that their late events (the answer can
	// overtake the stream) are not replayed into the next turn. Only the
	// turn in flight touches them.
	turns int
	msgs  map[string]*msgState
	parts map[string]*partState

	*turn.Runner // the turn in flight, its cancel (abort), Close

	mu   sync.Mutex
	turn *turnState
}

func (s *session) ID() string { return s.id }

func (s *session) Process() runtime.ProcessInfo {
	if s.srv == nil {
		return runtime.ProcessInfo{}
	}
	return s.srv.info(s.version)
}

// turnState is what one turn has seen.
type turnState struct {
	rt     *turn.Turn // the runner's: Cancelled, and the cancel itself
	events chan event
	done   chan struct{}

	n      int               // the session's turn number
	tokens map[string]tokens // this turn's assistant message id → its tokens
	errMsg string
	// busy: the session went busy in this turn; a session.error before
	// that is a late one of the previous turn.
	busy  bool
	perms sync.WaitGroup
}

// msgState is what is known of one message: its role and the turn that
// first saw it.
type msgState struct {
	role string
	turn int
}

// maxTracked bounds the messages and parts remembered per session; past it
// the memory starts afresh.
const maxTracked = 4096

// msg returns the state of message id, first seen by turn t when new.
func (s *session) msg(t *turnState, id string) *msgState {
	m := s.msgs[id]
	if m == nil {
		m = &msgState{turn: t.n}
		s.msgs[id] = m
	}
	return m
}

// ours reports whether message id belongs to turn t and is not the user's.
func (s *session) ours(t *turnState, id string) bool {
	m := s.msg(t, id)
	return m.turn == t.n && m.role != "user"
}

type partState struct {
	kind   string // text, reasoning, tool
	text   string // text emitted so far
	status string // tool status emitted so far
}

// cancel cancels the turn: the runner aborts it on the server.
func (s *session) cancel(t *turnState) { s.Runner.CancelTurn(t.rt) }

type promptResult struct {
	msg message
	err error
}

// Prompt sends POST /session/{id}/message and relays the session's SSE
// events until its answer: the answer ends the turn (an idle on SSE does
// not, docs/backends.md#opencode-http-plugin-opencode).
func (s *session) Prompt(ctx context.Context, in runtime.Turn) (runtime.TurnResult, error) {
	rt, err := s.Runner.Begin(ctx)
	if err != nil {
		return runtime.TurnResult{}, err
	}
	defer s.Runner.End(rt)
	t := &turnState{
		rt: rt, events: make(chan event, turnQueue), done: make(chan struct{}),
		tokens: map[string]tokens{},
	}
	if rt.IsCancelled() { // cancelled while starting: the server was asked nothing
		return s.result(t, runtime.StopCancelled, nil), nil
	}
	s.mu.Lock()
	s.turn = t
	s.mu.Unlock()
	s.turns++
	t.n = s.turns
	if s.msgs == nil || len(s.msgs) > maxTracked || len(s.parts) > maxTracked {
		s.msgs, s.parts = map[string]*msgState{}, map[string]*partState{}
	}
	turnCtx, endTurn := context.WithCancel(ctx)
	defer func() {
		s.mu.Lock()
		s.turn = nil
		s.mu.Unlock()
		close(t.done)
		endTurn()
		t.perms.Wait()
	}()

	body := map[string]any{"parts": []map[string]any{{"type": "text", "text": in.Text}}}
	if s.model != nil {
		body["model"] = s.model
	}
	if s.agent != "" {
		body["agent"] = s.agent
	}
	postCtx, stopPost := context.WithCancel(turnCtx)
	defer stopPost()
	answer := make(chan promptResult, 1)
	go func() {
		var r promptResult
		select {
		case <-rt.Cancelled():
			r.err = errors.New("cancelled before the prompt was sent")
		default:
			r.err = s.c.do(postCtx, "POST", "/session/"+s.id+"/message", body, &r.msg)
		}
		answer <- r
	}()

	var giveUp, reAbort <-chan time.Time
	cancelled := rt.Cancelled()
	for {
		select {
		case ev := <-t.events:
			s.handle(turnCtx, t, ev)
		case r := <-answer:
			s.drain(turnCtx, t)
			return s.finish(turnCtx, t, r)
		case <-cancelled:
			cancelled = nil
			giveUp = time.After(abortWait)
			// An abort that overtook the prompt finds nothing to stop:
			// send it once more.
			reAbort = time.After(abortWait / 6)
		case <-reAbort:
			reAbort = nil
			s.abort()
		case <-giveUp:
			s.log.Debug("the server did not end the aborted turn in time", "session_id", s.id)
			return s.result(t, runtime.StopCancelled, nil), nil
		case <-ctx.Done():
			s.abort()
			return s.result(t, runtime.StopCancelled, nil), ctx.Err()
		}
	}
}

// drain handles the events already queued when the answer came.
func (s *session) drain(ctx context.Context, t *turnState) {
	for {
		select {
		case ev := <-t.events:
			s.handle(ctx, t, ev)
		default:
			return
		}
	}
}

func (s *session) isCancelled(t *turnState) bool {
	select {
	case <-t.rt.Cancelled():
		return true
	default:
		return false
	}
}

// finish turns the message answer into the turn's result, after reading
// the history again so that nothing the stream missed is lost.
func (s *session) finish(ctx context.Context, t *turnState, r promptResult) (runtime.TurnResult, error) {
	if r.err != nil {
		if s.isCancelled(t) {
			return s.result(t, runtime.StopCancelled, nil), nil
		}
		return runtime.TurnResult{}, errorf("%v", r.err)
	}
	// The answer can overtake the stream's last events (a tool part's
	// completion, the end of a text), and after a reconnect the stream
	// has a gap: the history has it all (runtime-protocols §2.7).
	s.reconcile(ctx, t, true)
	if r.msg.Info.ID != "" {
		s.msg(t, r.msg.Info.ID).role = "assistant"
		if r.msg.Info.Tokens != nil {
			t.tokens[r.msg.Info.ID] = *r.msg.Info.Tokens
		}
	}
	for _, p := range r.msg.Parts {
		s.snapshot(t, p)
	}
	info := r.msg.Info
	switch {
	case s.isCancelled(t) || (info.Error != nil && info.Error.Name == "MessageAbortedError"):
		return s.result(t, runtime.StopCancelled, nil), nil
	case info.Error != nil:
		t.errMsg = info.Error.String()
		return s.result(t, runtime.StopError, nil), nil
	case t.errMsg != "":
		return s.result(t, runtime.StopError, nil), nil
	}
	return s.result(t, stopReason(info.Finish), &r.msg), nil
}

func stopReason(finish string) runtime.StopReason {
	switch finish {
	case "length":
		return runtime.StopMaxTokens
	case "content-filter":
		return runtime.StopRefusal
	}
	return runtime.StopEndTurn
}

func (s *session) result(t *turnState, stop runtime.StopReason, final *message) runtime.TurnResult {
	r := runtime.TurnResult{StopReason: stop, Extra: map[string]any{
		"unknown_frames": s.unknown.Load(), "runtime_version": s.version,
	}}
	if stop == runtime.StopError && t.errMsg != "" {
		r.Extra["error_message"] = t.errMsg
	}
	if len(t.tokens) > 0 {
		var u runtime.Usage
		for _, tk := range t.tokens {
			u.InputTokens += tk.Input
			u.OutputTokens += tk.Output + tk.Reasoning
			u.CachedReadTokens += tk.Cache.Read
		}
		u.TotalTokens = u.InputTokens + u.OutputTokens
		r.Usage = &u
	}
	if final != nil {
		var b strings.Builder
		for _, p := range final.Parts {
			if p.Type == "text" && !p.Synthetic {
				b.WriteString(p.Text)
			}
		}
		r.FinalOutput, r.HasFinalOutput = b.String(), true
	}
	return r
}

// reconcile re-reads the session's history and emits what the stream
// missed in this turn: the messages after the last user message. Mid-turn
// that user message must be this turn's (seen on the stream), or the
// previous turn's answer would be replayed; at the end it is this turn's.
func (s *session) reconcile(ctx context.Context, t *turnState, final bool) {
	var msgs []message
	if err := s.c.do(ctx, "GET", "/session/"+s.id+"/message", nil, &msgs); err != nil {
		s.log.Debug("re-reading the session's messages", "error", err)
		return
	}
	start, last := 0, ""
	for i, m := range msgs {
		if m.Info.Role == "user" {
			start, last = i+1, m.Info.ID
		}
	}
	if lm := s.msgs[last]; !final && (lm == nil || lm.turn != t.n) {
		return // this turn's prompt is not in the history yet
	}
	for _, m := range msgs[start:] {
		ms := s.msg(t, m.Info.ID)
		ms.role = m.Info.Role
		if m.Info.Tokens != nil && m.Info.Role == "assistant" && ms.turn == t.n {
			t.tokens[m.Info.ID] = *m.Info.Tokens
		}
		for _, p := range m.Parts {
			s.snapshot(t, p)
		}
	}
}

// handle maps one SSE event of the session.
func (s *session) handle(ctx context.Context, t *turnState, ev event) {
	if ev.resync {
		s.reconcile(ctx, t, false)
		return
	}
	p := ev.p
	switch ev.typ {
	case "message.updated":
		if p.Info != nil {
			ms := s.msg(t, p.Info.ID)
			ms.role = p.Info.Role
			if p.Info.Role == "assistant" && p.Info.Tokens != nil && ms.turn == t.n {
				t.tokens[p.Info.ID] = *p.Info.Tokens
			}
		}
	case "message.part.updated":
		if p.Part != nil {
			s.snapshot(t, *p.Part)
		}
	case "message.part.delta":
		if p.Field != "text" || p.Delta == "" || !s.ours(t, p.MessageID) {
			return
		}
		ps := s.parts[p.PartID]
		if ps == nil {
			ps = &partState{kind: "text"}
			s.parts[p.PartID] = ps
		}
		switch ps.kind {
		case "text":
			s.host.Emit(runtime.MessageChunk(s.id, p.Delta))
		case "reasoning":
			s.host.Emit(runtime.ThoughtChunk(s.id, p.Delta))
		default:
			return
		}
		ps.text += p.Delta
	case "session.status":
		if p.Status != nil && p.Status.Type == "busy" {
			t.busy = true
		}
	case "session.error":
		// An abort is told by the answer; an error before this turn's busy
		// is the previous turn's, arriving late.
		if p.Error == nil || p.Error.Name == "MessageAbortedError" || !t.busy {
			return
		}
		t.errMsg = p.Error.String()
	case "permission.asked":
		s.permission(ctx, t, p)
	}
}

// snapshot emits what a full part adds to what was emitted of it.
func (s *session) snapshot(t *turnState, p part) {
	if !s.ours(t, p.MessageID) {
		return
	}
	ps := s.parts[p.ID]
	if ps == nil {
		ps = &partState{kind: p.Type}
		s.parts[p.ID] = ps
	}
	ps.kind = p.Type
	switch p.Type {
	case "text", "reasoning":
		if p.Synthetic || !strings.HasPrefix(p.Text, ps.text) || len(p.Text) == len(ps.text) {
			return
		}
		suffix := p.Text[len(ps.text):]
		ps.text = p.Text
		if p.Type == "text" {
			s.host.Emit(runtime.MessageChunk(s.id, suffix))
		} else {
			s.host.Emit(runtime.ThoughtChunk(s.id, suffix))
		}
	case "tool":
		if p.State == nil {
			return
		}
		status := toolStatus(p.State.Status)
		if status == ps.status {
			return
		}
		f := map[string]any{"toolCallId": p.CallID, "status": status, "session_id": s.id}
		if len(p.State.Input) > 0 && string(p.State.Input) != "{}" {
			f["rawInput"] = json.RawMessage(p.State.Input)
		}
		if ps.status == "" {
			f["title"], f["kind"], f["session_update"] = p.Tool, toolKind(p.Tool), "tool_call"
			ps.status = status
			s.host.Emit(runtime.NewEvent(runtime.EventToolCall, f))
			return
		}
		ps.status = status
		f["session_update"] = "tool_call_update"
		if p.State.Title != "" {
			f["title"] = p.State.Title
		}
		switch status {
		case "completed":
			f["rawOutput"] = map[string]any{"output": p.State.Output}
		case "failed":
			f["rawOutput"] = map[string]any{"error": p.State.Error}
		}
		s.host.Emit(runtime.NewEvent(runtime.EventToolCallUpdate, f))
	}
}

func toolStatus(st string) string {
	switch st {
	case "running":
		return "in_progress"
	case "completed":
		return "completed"
	case "error":
		return "failed"
	}
	return "pending"
}

func toolKind(tool string) string {
	switch tool {
	case "bash":
		return "execute"
	case "edit", "write", "patch", "multiedit":
		return "edit"
	case "read", "list", "ls":
		return "read"
	case "grep", "glob", "codesearch":
		return "search"
	case "webfetch", "websearch":
		return "fetch"
	}
	return "other"
}

// Permission options offered to the host: OpenCode's replies.
var permissionOptions = []runtime.PermissionOption{
	{ID: "once", Kind: runtime.KindAllowOnce, Name: "Allow once"},
	{ID: "always", Kind: runtime.KindAllowAlways, Name: "Always allow"},
	{ID: "reject", Kind: "reject_once", Name: "Reject"},
}

// permission relays permission.asked to the host and answers the server
// with its decision, without holding up the events that follow.
func (s *session) permission(ctx context.Context, t *turnState, p *properties) {
	fields := map[string]any{"session_id": s.id, "permission": p.Permission, "patterns": p.Patterns}
	if len(p.Metadata) > 0 {
		fields["metadata"] = json.RawMessage(p.Metadata)
	}
	if p.Tool != nil {
		fields["toolCallId"] = p.Tool.CallID
	}
	question := p.Permission
	if len(p.Patterns) > 0 {
		question += ": " + strings.Join(p.Patterns, ", ")
	}
	req := runtime.PermissionRequest{ID: p.ID, Options: permissionOptions, Tool: p.Permission, Question: question, Fields: fields}
	var wait func(context.Context) (runtime.PermissionDecision, error)
	if rec, ok := s.host.(runtime.PermissionRecorder); ok {
		wait = rec.RecordPermission(ctx, req)
	} else {
		wait = func(ctx context.Context) (runtime.PermissionDecision, error) { return s.host.AskPermission(ctx, req) }
	}
	t.perms.Add(1)
	go func() {
		defer t.perms.Done()
		d, err := wait(ctx)
		if ctx.Err() != nil {
			return // the turn is over; the abort answered it
		}
		if err != nil || d.Outcome == runtime.OutcomeCancelled {
			// A cancelled answer cancels the turn, as in ACP.
			s.log.Debug("permission cancelled: aborting the turn", "id", p.ID, "error", err)
			s.cancel(t)
			return
		}
		reply := "reject"
		switch {
		case d.Allowed() && (d.Kind == runtime.KindAllowAlways || d.OptionID == "always"):
			reply = "always"
		case d.Allowed():
			reply = "once"
		}
		s.reply(ctx, p.ID, reply, d.Message)
	}()
}

func (s *session) reply(ctx context.Context, id, reply, msg string) {
	body := map[string]any{"reply": reply}
	if msg != "" {
		body["message"] = msg
	}
	err := s.c.do(ctx, "POST", "/permission/"+id+"/reply", body, nil)
	if errors.Is(err, errNotFound) {
		// Older servers: the deprecated per-session route.
		err = s.c.do(ctx, "POST", "/session/"+s.id+"/permissions/"+id, map[string]any{"response": reply}, nil)
	}
	if err != nil {
		s.log.Warn("answering a permission request", "id", id, "error", err)
	}
}

// abort is POST /session/{id}/abort, bounded.
func (s *session) abort() {
	ctx, cancel := context.WithTimeout(context.Background(), abortWait)
	defer cancel()
	if err := s.c.do(ctx, "POST", "/session/"+s.id+"/abort", map[string]any{}, nil); err != nil {
		s.log.Debug("abort", "session_id", s.id, "error", err)
	}
}

// Close aborts a turn in flight, closes the event stream and stops the
// server the session started.
func (s *session) Close(ctx context.Context) error {
	s.Runner.Close(func() {
		s.closeEvents()
		s.stopServer()
		s.log.Debug("opencode-http session closed", "session_id", s.id, "unknown_frames", s.unknown.Load(), "runtime_version", s.version)
	})
	return nil
}

func (s *session) stopServer() {
	if s.srv != nil {
		if err := s.srv.proc.Stop(serverStopGrace); err != nil {
			s.log.Debug("stopping "+s.srv.String(), "error", err)
		}
	}
}
