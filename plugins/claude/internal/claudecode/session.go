package claudecode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/procsession"
	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/turn"
)

// streamConfig is how to launch one `claude -p` stream-json process.
type streamConfig struct {
	// Questions: AskUserQuestion goes to the host as a question; false
	// keeps it a permission request, as before.
	Questions bool
	Backend   string   // for messages
	Binary    string   // resolved CLI name or path
	Version   string   // what `--version` said, e.g. "2.1.332"
	Args      []string // complete argument list
	Env       []string
	Dir       string
	SessionID string // --session-id for a new session, or the --resume id
	Resume    bool

	InitTimeout time.Duration // initialize answer; default 60s
	CancelWait  time.Duration // interrupt → result; default 3s
	StopGrace   time.Duration // each step of stopping; default 2s
	InstallHint string
	// launchFiles are the launch context's files, removed when the session
	// closes; nil when there are none.
	launchFiles *launchFiles
}

// Bounds of a session.
const (
	defaultInitTimeout = 60 * time.Second
	defaultCancelWait  = 3 * time.Second
	defaultStopGrace   = 2 * time.Second
	// maxHeld bounds the events held between turns.
	maxHeld = 512
	// exitWait bounds the wait for a CLI whose output ended to be reaped.
	exitWait = 2 * time.Second
)

// streamSession is one claude -p process serving one session, turn after
// turn: a `user` line per prompt, a `result` line ends the turn.
type streamSession struct {
	cfg  streamConfig
	host runtime.Host
	log  hclog.Logger
	proc *agentproc.Process

	writeMu sync.Mutex
	reqSeq  atomic.Int64

	gone chan struct{} // closed when stdout has ended

	gate         *turn.Gate // keeps events inside turns
	*turn.Runner            // the turn in flight, cancel, grace then kill, close

	mu       sync.Mutex
	pending  map[string]chan controlResponse
	turn     *streamTurn
	streamed map[string]bool // message ids whose text came as stream_event deltas
	curMsg   string          // the message id being streamed
	tools    map[string]string
	// contextUsed is the tokens the last model call read and wrote: the
	// context window's use (ExtraContextUsedTokens).
	contextUsed int64
	noise       []string
}

// streamTurn is the turn in flight.
type streamTurn struct {
	rt      *turn.Turn       // the runner's: its context ends pending permission requests
	result  chan resultFrame // buffered 1
	unknown atomic.Int64
	limit   atomic.Pointer[rateLimitInfo] // the turn's last rate_limit_event (ratelimit.go)
}

func (t *streamTurn) isCancelled() bool { return t.rt.IsCancelled() }

// openStream starts the CLI and waits for its answer to initialize. A
// resumed session that Claude Code does not know makes it exit at once;
// that is the user's fault (ErrSessionNotFound).
func openStream(ctx context.Context, cfg streamConfig, host runtime.Host) (*streamSession, error) {
	procsession.Default(&cfg.InitTimeout, defaultInitTimeout)
	procsession.Default(&cfg.CancelWait, defaultCancelWait)
	procsession.Default(&cfg.StopGrace, defaultStopGrace)
	s := &streamSession{cfg: cfg, host: host, gone: make(chan struct{}),
		pending: map[string]chan controlResponse{}, streamed: map[string]bool{}, tools: map[string]string{}}
	sk := procsession.New(procsession.Config{Backend: cfg.Backend, Host: host, MaxHeld: maxHeld,
		Grace: cfg.CancelWait, OnOverdue: s.overdue})
	s.log, s.gate, s.Runner = sk.Log, sk.Gate, sk.Runner
	log := s.log
	proc, err := procsession.Start(cfg.Backend, agentproc.Spec{
		Path: cfg.Binary, Args: cfg.Args, Dir: cfg.Dir, Env: cfg.Env,
		InstallHint: cfg.InstallHint, CancelGrace: cfg.StopGrace, Logger: log.Named("claude"),
	})
	if err != nil {
		return nil, err
	}
	s.proc = proc
	procsession.Record(host, s.Process())
	go s.read()

	resp, err := s.control(ctx, map[string]any{"subtype": "initialize", "hooks": nil}, cfg.InitTimeout)
	if err == nil && resp.Subtype == "error" {
		err = runtime.Errorf(runtime.FaultRuntime, "%s: %s refused initialize: %s", cfg.Backend, cfg.Binary, resp.Error)
	}
	if err != nil {
		s.shutdown()
		return nil, err
	}
	return s, nil
}

// control sends a control request and waits for its answer.
func (s *streamSession) control(ctx context.Context, req map[string]any, timeout time.Duration) (controlResponse, error) {
	id := fmt.Sprintf("avenor_%d", s.reqSeq.Add(1))
	ch := make(chan controlResponse, 1)
	s.mu.Lock()
	s.pending[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}()
	stage := fmt.Sprint(req["subtype"])
	if err := s.write(map[string]any{"type": "control_request", "request_id": id, "request": req}); err != nil {
		return controlResponse{}, s.exitedErr(stage)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r, nil
	case <-s.gone:
		return controlResponse{}, s.exitedErr(stage)
	case <-timer.C:
		return controlResponse{}, runtime.Errorf(runtime.FaultRuntime, "%s: %s did not answer the %s control request within %s; is it Claude Code with stream-json input (2.x)?%s",
			s.cfg.Backend, s.cfg.Binary, stage, timeout, s.diagnostics())
	case <-ctx.Done():
		return controlResponse{}, runtime.Errorf(runtime.FaultRuntime, "%s: %s interrupted: %v", s.cfg.Backend, stage, context.Cause(ctx))
	}
}

// write sends one stdin line.
func (s *streamSession) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	_, err = s.proc.Stdin().Write(append(b, '\n'))
	return err
}

// exitedErr is the error of a CLI that exited during stage. Claude Code
// says "No conversation found" for an unknown --resume id.
func (s *streamSession) exitedErr(stage string) error {
	select {
	case <-s.proc.Done():
	case <-time.After(exitWait):
	}
	status := "its output closed"
	var ee *exec.ExitError
	if err := s.proc.ExitErr(); errors.As(err, &ee) {
		status = ee.Error()
	} else if isClosed(s.proc.Done()) {
		status = "exit status 0"
	}
	tail := s.proc.StderrTail()
	if s.cfg.Resume && strings.Contains(tail, "No conversation found") {
		return runtime.Errorf(runtime.FaultUser, "%s: session %q: %v (Claude Code: %s); resuming needs the same --dir and HOME (or CLAUDE_CONFIG_DIR) as the first run",
			s.cfg.Backend, s.cfg.SessionID, runtime.ErrSessionNotFound, strings.TrimSpace(lastLines(tail, 2)))
	}
	return runtime.Errorf(runtime.FaultRuntime, "%s: %s exited during %s (%s)%s", s.cfg.Backend, s.cfg.Binary, stage, status, s.diagnostics())
}

func (s *streamSession) diagnostics() string {
	var b strings.Builder
	s.mu.Lock()
	if len(s.noise) > 0 {
		fmt.Fprintf(&b, "\nnon-JSON output on stdout: %s", strings.Join(s.noise, " | "))
	}
	s.mu.Unlock()
	if tail := agentproc.StderrReport(s.proc); tail != "" {
		fmt.Fprintf(&b, "\nstderr:\n%s", tail)
	}
	return b.String()
}

// lastLines is the end of a screen or of stderr, for an error message.
func lastLines(s string, n int) string {
	return agentproc.LastLines(s, n, agentproc.ExitReportBytes)
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// read dispatches stdout lines until the CLI's output ends.
func (s *streamSession) read() {
	for l := range s.proc.Lines() {
		if l.Err != nil {
			if errors.Is(l.Err, agentproc.ErrLineTooLong) {
				s.warn(fmt.Sprintf("%s: %s wrote a line over the %d-byte limit; it was dropped", s.cfg.Backend, s.cfg.Binary, agentproc.DefaultMaxLineBytes))
				continue
			}
			s.log.Debug("reading claude's stdout", "error", l.Err)
			continue
		}
		s.handle(l.Data)
	}
	close(s.gone)
}

func (s *streamSession) handle(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	var f frame
	if line[0] != '{' || json.Unmarshal(line, &f) != nil {
		s.mu.Lock()
		if len(s.noise) < 5 {
			s.noise = append(s.noise, runtime.Truncate(string(line), 200))
		}
		s.mu.Unlock()
		s.log.Debug("non-JSON output on stdout", "line", runtime.Truncate(string(line), 200))
		return
	}
	sid := s.cfg.SessionID
	switch f.Type {
	case "control_response":
		if f.Response == nil {
			return
		}
		s.mu.Lock()
		ch := s.pending[f.Response.RequestID]
		s.mu.Unlock()
		if ch != nil {
			ch <- *f.Response
		}
	case "control_request":
		s.controlRequest(f, line)
	case "system":
		if f.Subtype == "init" && f.SessionID != "" && f.SessionID != s.cfg.SessionID {
			s.log.Warn("claude reports another session id than asked for", "asked", s.cfg.SessionID, "got", f.SessionID)
		}
	case "stream_event":
		s.streamEvent(sid, f.Event)
	case "rate_limit_event":
		s.rateLimitEvent(sid, line)
	case "assistant":
		s.assistant(sid, f.Message)
	case "user":
		for _, b := range f.Message.blocks() {
			if b.Type == "tool_result" {
				s.mu.Lock()
				kind := s.tools[b.ToolUseID]
				s.mu.Unlock()
				if kind == "" {
					kind = "other"
				}
				s.emit(toolResultEvent(sid, b, kind))
			}
		}
	case "result":
		var r resultFrame
		_ = json.Unmarshal(line, &r)
		s.mu.Lock()
		t := s.turn
		s.mu.Unlock()
		if t == nil {
			s.log.Debug("a result outside a turn", "subtype", r.Subtype)
			return
		}
		select {
		case t.result <- r:
		default:
		}
	default:
		if knownTypes[f.Type] {
			return
		}
		s.mu.Lock()
		if t := s.turn; t != nil {
			t.unknown.Add(1)
		}
		s.mu.Unlock()
		s.emit(nativeEvent(f.Type, sid, line))
	}
}

func (s *streamSession) streamEvent(sid string, ev *streamEvent) {
	if ev == nil {
		return
	}
	switch ev.Type {
	case "message_start":
		if ev.Message != nil {
			s.mu.Lock()
			s.curMsg = ev.Message.ID
			s.mu.Unlock()
		}
	case "content_block_delta":
		if ev.Delta == nil {
			return
		}
		var e runtime.Event
		switch ev.Delta.Type {
		case "text_delta":
			e = runtime.MessageChunk(sid, ev.Delta.Text)
		case "thinking_delta":
			e = runtime.ThoughtChunk(sid, ev.Delta.Thinking)
		default:
			return
		}
		s.mu.Lock()
		if s.curMsg != "" {
			s.streamed[s.curMsg] = true
			e.Fields["messageId"] = s.curMsg
		}
		s.mu.Unlock()
		s.emit(e)
	}
}

// assistant maps a whole assistant message: text and thinking unless they
// already came as deltas, and every tool_use.
func (s *streamSession) assistant(sid string, m *apiMessage) {
	if m == nil {
		return
	}
	s.mu.Lock()
	streamed := m.ID != "" && s.streamed[m.ID]
	if u := m.Usage; u != nil {
		s.contextUsed = u.input() + u.OutputTokens
	}
	s.mu.Unlock()
	for _, b := range m.blocks() {
		switch b.Type {
		case "text":
			if !streamed && b.Text != "" {
				e := runtime.MessageChunk(sid, b.Text)
				if m.ID != "" {
					e.Fields["messageId"] = m.ID
				}
				s.emit(e)
			}
		case "thinking":
			if !streamed && b.Thinking != "" {
				s.emit(runtime.ThoughtChunk(sid, b.Thinking))
			}
		case "tool_use":
			s.mu.Lock()
			s.tools[b.ID] = toolKind(b.Name)
			s.mu.Unlock()
			s.emit(toolCallEvent(sid, b))
		}
	}
}

// controlRequest answers a request of the CLI: can_use_tool goes to the
// host; anything else is refused at once so the CLI never waits.
func (s *streamSession) controlRequest(f frame, line []byte) {
	var req canUseTool
	_ = json.Unmarshal(f.Request, &req)
	if req.Subtype != "can_use_tool" {
		s.emit(nativeEvent("control_request/"+req.Subtype, s.cfg.SessionID, line))
		_ = s.write(map[string]any{"type": "control_response", "response": map[string]any{
			"subtype": "error", "request_id": f.RequestID, "error": "avenor does not serve " + req.Subtype}})
		return
	}
	if req.ToolName == askUserQuestionTool && s.cfg.Questions {
		s.question(f.RequestID, req)
		return
	}
	s.permission(f.RequestID, req)
}

// permission relays can_use_tool to the host and answers with its
// decision (runtime-protocols.md §5.2, §7.2). It runs on the reader, so
// nothing the CLI writes later overtakes the request.
func (s *streamSession) permission(requestID string, req canUseTool) {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	ctx := context.Background()
	if t != nil {
		ctx = t.rt.Context()
	}
	opts := []runtime.PermissionOption{{ID: "allow", Kind: runtime.KindAllowOnce, Name: "Allow"}}
	var suggestions []any
	if len(req.PermissionSuggestion) > 0 {
		if json.Unmarshal(req.PermissionSuggestion, &suggestions) == nil && len(suggestions) > 0 {
			opts = append(opts, runtime.PermissionOption{ID: "allow_always", Kind: runtime.KindAllowAlways, Name: "Allow always"})
		}
	}
	opts = append(opts, runtime.PermissionOption{ID: "reject", Kind: runtime.KindReject, Name: "Deny"})
	question := req.Description
	if question == "" {
		question = "Allow " + req.ToolName + "?"
	}
	fields := map[string]any{"session_id": s.cfg.SessionID, "toolCallId": req.ToolUseID, "input": rawJSON(req.Input)}
	if req.BlockedPath != "" {
		fields["blocked_path"] = req.BlockedPath
	}
	if req.DecisionReason != "" {
		fields["decision_reason"] = req.DecisionReason
	}
	s.gate.Flush()
	d, err := s.host.AskPermission(ctx, runtime.PermissionRequest{
		ID: requestID, Options: opts, Tool: req.ToolName, Question: question, Fields: fields,
	})
	input := req.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	var resp map[string]any
	switch {
	case err != nil || d.Outcome == runtime.OutcomeCancelled:
		if t != nil {
			s.Runner.CancelTurn(t.rt)
		}
		resp = map[string]any{"behavior": "deny", "message": "The user cancelled the turn.", "interrupt": true}
	case d.Allowed():
		resp = map[string]any{"behavior": "allow", "updatedInput": input}
		if d.Kind == runtime.KindAllowAlways && suggestions != nil {
			resp["updatedPermissions"] = suggestions
		}
	default:
		msg := d.Message
		if msg == "" {
			msg = "The user denied this tool call."
		}
		resp = map[string]any{"behavior": "deny", "message": msg, "interrupt": false}
	}
	if err := s.write(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": requestID, "response": resp}}); err != nil {
		s.log.Debug("answering can_use_tool", "error", err)
	}
}

// emit sends an event in stream order; between turns events are held and
// sent when the next turn starts.
func (s *streamSession) emit(ev runtime.Event) { s.gate.Emit(ev) }

func (s *streamSession) warn(msg string) {
	s.log.Warn(msg)
	s.emit(runtime.NewEvent(runtime.EventWarning, map[string]any{"source": "backend", "message": msg}))
}

// ID is the Claude Code session id (--session-id / --resume).
func (s *streamSession) ID() string { return s.cfg.SessionID }

// Process names the CLI's process and group.
func (s *streamSession) Process() runtime.ProcessInfo {
	return runtime.ProcessInfo{PID: s.proc.PID(), PGID: s.proc.PGID(), Binary: s.cfg.Binary, Version: s.cfg.Version}
}

// StartFields adds the runtime to session.start.
func (s *streamSession) StartFields() map[string]any {
	f := map[string]any{"runtime": "claude-code", "dangerously_load": false}
	if s.cfg.Version != "" {
		f["runtime_version"] = s.cfg.Version
	}
	return f
}

// Prompt writes one user line and waits for its result. On Cancel (or ctx
// ending) it sends the interrupt control request and waits CancelWait for
// the result; a CLI that does not answer is killed with its group.
func (s *streamSession) Prompt(ctx context.Context, in runtime.Turn) (runtime.TurnResult, error) {
	rt, err := s.Runner.Begin(ctx)
	if err != nil {
		return runtime.TurnResult{StopReason: runtime.StopError}, err
	}
	defer s.Runner.End(rt)
	t := &streamTurn{rt: rt, result: make(chan resultFrame, 1)}
	defer turn.Publish(&s.mu, &s.turn, t)()
	if rt.IsCancelled() { // cancelled while starting: claude was asked nothing
		return s.result(t, runtime.StopCancelled), nil
	}
	content, err := imageBlocks(in.Images)
	if err != nil {
		return runtime.TurnResult{StopReason: runtime.StopError}, err
	}
	content = append(content, map[string]any{"type": "text", "text": in.Text})
	// The prompt goes over stdin, never argv.
	if err := s.write(map[string]any{"type": "user", "session_id": "", "parent_tool_use_id": nil,
		"message": map[string]any{"role": "user", "content": content}}); err != nil {
		e := s.exitedErr("the turn")
		s.markDead(e)
		return runtime.TurnResult{StopReason: runtime.StopError}, e
	}
	// The interrupt is written from here, after the user line, so claude
	// never reads it before the prompt it interrupts.
	cancelled := rt.Cancelled()
	for {
		select {
		case r := <-t.result:
			return s.turnResult(t, r)
		case <-s.gone:
			// A result written just before the exit still counts.
			select {
			case r := <-t.result:
				return s.turnResult(t, r)
			default:
			}
			if t.isCancelled() {
				return s.result(t, runtime.StopCancelled), nil
			}
			e := s.exitedErr("the turn")
			s.markDead(e)
			return runtime.TurnResult{StopReason: runtime.StopError}, e
		case <-cancelled:
			cancelled = nil
			s.interrupt()
		case <-rt.Overdue():
			return s.result(t, runtime.StopCancelled), nil
		}
	}
}

// authFix is what to do, as a suffix of the turn's error, when Claude Code
// ended a turn for want of credentials ("Not logged in · Please run
// /login", "Invalid API key"); "" for any other failure.
func authFix(backend, msg string) string {
	low := strings.ToLower(msg)
	if !strings.Contains(low, "not logged in") && !strings.Contains(low, "invalid api key") && !strings.Contains(low, "/login") {
		return ""
	}
	return fmt.Sprintf(" (Claude Code is not authenticated: set ANTHROPIC_API_KEY in [backends.%s].env (or in avenor's environment), or run `claude` and /login as the user avenor runs as)", backend)
}

// overdue: claude did not end an interrupted turn within CancelWait.
func (s *streamSession) overdue(*turn.Turn) {
	msg := fmt.Sprintf("%s: claude did not end the interrupted turn within %s; killed it and its process group", s.cfg.Backend, s.cfg.CancelWait)
	s.warn(msg)
	s.markDead(errors.New(msg))
	if err := agentproc.KillGroup(s.proc.PGID()); err != nil {
		s.log.Warn("killing claude's process group", "error", err)
	}
}

// result is a TurnResult with the extras every claude session.end carries.
func (s *streamSession) result(t *streamTurn, stop runtime.StopReason) runtime.TurnResult {
	return runtime.TurnResult{StopReason: stop, Extra: map[string]any{
		"status": "done", "unknown_frames": t.unknown.Load(), "runtime_version": s.cfg.Version}}
}

// turnResult converts a result frame (runtime-protocols.md §7.1).
func (s *streamSession) turnResult(t *streamTurn, r resultFrame) (runtime.TurnResult, error) {
	res := s.result(t, runtime.StopEndTurn)
	if r.Usage != nil {
		in := r.Usage.input()
		res.Usage = &runtime.Usage{InputTokens: in, OutputTokens: r.Usage.OutputTokens,
			TotalTokens: in + r.Usage.OutputTokens, CachedReadTokens: r.Usage.CacheReadInputTokens}
	}
	if r.TotalCostUSD != nil {
		res.Extra["cost_usd"] = *r.TotalCostUSD
	}
	s.mu.Lock()
	used := s.contextUsed
	s.mu.Unlock()
	if w := r.contextWindow(); w > 0 && used > 0 {
		res.Extra[runtime.ExtraContextUsedTokens], res.Extra[runtime.ExtraContextWindowTokens] = used, w
	}
	if r.NumTurns > 0 {
		res.Extra["num_turns"] = r.NumTurns
	}
	if len(r.PermissionDenials) > 0 {
		res.Extra["permission_denials"] = len(r.PermissionDenials)
	}
	if r.Result != nil && !r.IsError {
		res.FinalOutput, res.HasFinalOutput = *r.Result, true
	}
	switch {
	case t.isCancelled():
		res.StopReason = runtime.StopCancelled
		return res, nil
	case r.Subtype == "error_max_turns":
		res.StopReason = runtime.StopMaxTurnRequests
		return res, nil
	case r.Subtype != "" && r.Subtype != "success", r.IsError:
		res.StopReason = runtime.StopError
		msg := strings.TrimSpace(string(r.Errors))
		if r.Result != nil && *r.Result != "" {
			msg = *r.Result
		}
		if msg == "" || msg == "null" || msg == "[]" {
			msg = "no detail given"
		}
		res.Extra["error"] = msg
		if err := rateLimitError(s.cfg.Backend, t, msg); err != nil {
			return res, err
		}
		return res, runtime.Errorf(runtime.FaultRuntime, "%s: claude ended the turn with %s: %s%s", s.cfg.Backend, r.Subtype, runtime.Truncate(msg, 500), authFix(s.cfg.Backend, msg))
	}
	switch r.StopReason {
	case "max_tokens":
		res.StopReason = runtime.StopMaxTokens
	case "refusal":
		res.StopReason = runtime.StopRefusal
	case "stop_sequence":
		res.StopReason = runtime.StopStopSequence
	}
	return res, nil
}

func (s *streamSession) markDead(err error) { s.Runner.MarkDead(err) }

// interrupt sends the interrupt control request (once per turn: the
// runner's cancel is once-only).
func (s *streamSession) interrupt() {
	id := fmt.Sprintf("avenor_%d", s.reqSeq.Add(1))
	if err := s.write(map[string]any{"type": "control_request", "request_id": id,
		"request": map[string]any{"subtype": "interrupt"}}); err != nil {
		s.log.Debug("sending interrupt", "error", err)
	}
}

// Close interrupts a turn in flight, closes claude's stdin (it exits at
// EOF) and stops it with its whole process group.
func (s *streamSession) Close(context.Context) error {
	s.shutdown()
	s.cfg.launchFiles.Remove()
	return nil
}

func (s *streamSession) shutdown() {
	s.Runner.Close(procsession.Stop{Proc: s.proc, Grace: s.cfg.StopGrace, Wait: s.gone, Log: s.log, What: "stopping claude"}.Run)
}
