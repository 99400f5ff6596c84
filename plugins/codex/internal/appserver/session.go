package appserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/jsonrpc"
	"github.com/avenor-go/avenor/sdk/procsession"
	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/turn"
)

// Bounds of a session.
const (
	// MaxLineBytes bounds one line of Codex's output: an item can carry a
	// whole file or command output (runtime-protocols.md §3).
	MaxLineBytes = 50 << 20
	// DefaultInitTimeout bounds initialize and thread/start or resume.
	DefaultInitTimeout = 60 * time.Second
	// DefaultCancelWait is how long a cancelled turn may take to end
	// (Codex answers turn/interrupt within ~20 ms) before the app-server
	// is killed with its process group; below the host's 5 s budget.
	DefaultCancelWait = 3 * time.Second
	// DefaultStopGrace is each step of stopping the app-server.
	DefaultStopGrace = 2 * time.Second
	// maxBuffered bounds the events held between turns.
	maxBuffered = 512
	// exitWait bounds the wait for an exited app-server to be reaped.
	exitWait = 2 * time.Second
)

// Config is one session's setup. Binary, Dir are required; zero durations
// mean the defaults above.
type Config struct {
	// Questions: the host hears Codex's request_user_input as questions;
	// false refuses them as before (-32601).
	Questions      bool
	Binary         string   // codex CLI, looked up in PATH
	Dir            string   // thread cwd and the process's working directory
	Env            []string // the app-server's full environment
	Model          string   // thread/start model; "" lets Codex's config decide
	Effort         string   // turn/start effort every turn; "" leaves Codex's
	Sandbox        string   // thread/start sandbox; "" lets Codex's config decide
	ResumeThreadID string   // thread/resume this thread instead of starting one
	// Boundary is the sandbox the app-server is launched inside
	// (agentproc.Spec.Sandbox); zero launches it as always.
	Boundary runtime.Sandbox

	InitTimeout time.Duration
	CancelWait  time.Duration
	StopGrace   time.Duration
}

// Session is one app-server process and one Codex thread.
type Session struct {
	cfg  Config
	host runtime.Host
	log  hclog.Logger
	proc *agentproc.Process
	conn *jsonrpc.Conn

	id      string
	version string // Codex's version, from initialize's userAgent

	unknown atomic.Int64 // frames without a mapping (avenor.native)

	gate         *turn.Gate // keeps events inside turns
	*turn.Runner            // the turn in flight, cancel, grace then kill, close

	mu   sync.Mutex
	turn *turnState // what the mapping fills in for the turn in flight
	// limitReset is the reset of the fullest rate-limit window the account
	// last reported (ratelimit.go); zero when none.
	limitReset time.Time
}

// turnState is what Codex says of the turn in flight. Its fields under
// Session.mu.
type turnState struct {
	rt   *turn.Turn    // the runner's turn: its context, cancel, overdue
	done chan struct{} // closed by turn/completed

	id            string // Codex's turn id, once known
	wantInterrupt bool
	interruptSent bool
	usage         *runtime.Usage
	// ctxUsed and ctxWindow are the context window's use after the last
	// model call (its total tokens) and its size, 0 until reported.
	ctxUsed, ctxWindow int64
	finalOutput        string
	hasFinal           bool
	result             runtime.TurnResult
	err                error // the turn's error: a rate limit's (ratelimit.go); nil for most
}

var _ runtime.Session = (*Session)(nil)

// open starts the app-server, runs the handshake and starts or resumes
// the thread. Every failure is a *runtime.Error; the process never
// outlives a failed open.
func open(ctx context.Context, cfg Config, host runtime.Host) (*Session, error) {
	procsession.Default(&cfg.InitTimeout, DefaultInitTimeout)
	procsession.Default(&cfg.CancelWait, DefaultCancelWait)
	procsession.Default(&cfg.StopGrace, DefaultStopGrace)
	s := &Session{cfg: cfg, host: host}
	sk := procsession.New(procsession.Config{Backend: Name, Host: host, MaxHeld: maxBuffered,
		Grace: cfg.CancelWait, Interrupt: s.interruptTurn, OnOverdue: s.overdue})
	s.log, s.gate, s.Runner = sk.Log, sk.Gate, sk.Runner
	log := s.log
	proc, err := procsession.Start(Name, agentproc.Spec{
		Path: cfg.Binary, Args: []string{"app-server"}, Dir: cfg.Dir, Env: cfg.Env,
		MaxLineBytes: MaxLineBytes, InstallHint: installHint, CancelGrace: cfg.StopGrace, Logger: log.Named("codex"),
		Sandbox: cfg.Boundary,
	})
	if err != nil {
		return nil, err
	}
	s.proc = proc
	procsession.Record(host, s.Process())
	s.conn = jsonrpc.NewConn(jsonrpc.ProcessLines(proc.Lines()), noVersionWriter{proc.Stdin()}, s,
		jsonrpc.ConnOptions{Logger: log, MaxFrame: MaxLineBytes, OnFrameError: s.frameError})
	if err := s.handshake(ctx); err != nil {
		s.shutdown()
		return nil, err
	}
	log.Debug("codex session open", "thread", s.id, "codex", s.version)
	return s, nil
}

// Wire shapes of the calls we make (runtime-protocols.md §3.2-3.3).
type (
	clientInfo struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	initializeParams struct {
		ClientInfo   clientInfo `json:"clientInfo"`
		Capabilities struct {
			ExperimentalAPI bool     `json:"experimentalApi"`
			OptOut          []string `json:"optOutNotificationMethods,omitempty"`
		} `json:"capabilities"`
	}
	threadParams struct {
		ThreadID       string `json:"threadId,omitempty"`
		Cwd            string `json:"cwd"`
		Model          string `json:"model,omitempty"`
		ApprovalPolicy string `json:"approvalPolicy"`
		Sandbox        string `json:"sandbox,omitempty"`
	}
	threadResult struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	userInput struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	// localImageInput is an image file Codex reads itself.
	localImageInput struct {
		Type string `json:"type"` // "localImage"
		Path string `json:"path"`
	}
	turnStartParams struct {
		ThreadID string `json:"threadId"`
		Input    []any  `json:"input"` // userInput, then localImageInput
		Effort   string `json:"effort,omitempty"`
	}
	turnStartResult struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	interruptParams struct {
		ThreadID string `json:"threadId"`
		TurnID   string `json:"turnId"`
	}
)

// The client initialize names (docs/backends.md#codex-app-server-plugin-codex): exactly what the original
// sent, whatever the plugin's own version. Codex turns the name into the
// model request's originator.
const (
	clientName    = "avenor"
	clientVersion = "0.0.0"
)

// approvalPolicy always asks: every decision goes through the
// host's broker. Codex 0.171 refuses it in config.toml but takes it here.
const approvalPolicy = "untrusted"

func (s *Session) handshake(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.InitTimeout)
	defer cancel()
	var p initializeParams
	p.ClientInfo = clientInfo{Name: clientName, Version: clientVersion}
	// docs/backends.md#codex-app-server-plugin-codex: the original asked for the experimental API, and
	// codex 0.171.0 accepts it with the same notifications as without
	// (e2e/codex_test.go); a harness relying on an experimental field
	// sees it as it did.
	p.Capabilities.ExperimentalAPI = true
	p.Capabilities.OptOut = []string{"account/rateLimits/updated"}
	var init struct {
		UserAgent string `json:"userAgent"`
	}
	if err := s.conn.Call(ctx, "initialize", p, &init); err != nil {
		return s.callErr("initialize", err)
	}
	s.version = versionOf(init.UserAgent)
	if err := s.conn.Notify("initialized", map[string]any{}); err != nil {
		return s.callErr("initialized", err)
	}
	tp := threadParams{Cwd: s.cfg.Dir, Model: s.cfg.Model, ApprovalPolicy: approvalPolicy, Sandbox: s.cfg.Sandbox}
	method := "thread/start"
	if s.cfg.ResumeThreadID != "" {
		method, tp.ThreadID = "thread/resume", s.cfg.ResumeThreadID
	}
	var res threadResult
	if err := s.conn.Call(ctx, method, tp, &res); err != nil {
		return s.callErr(method, err)
	}
	if res.Thread.ID == "" {
		return runtime.Errorf(runtime.FaultRuntime, "%s: %s answered %s without a thread id", Name, s.codexName(), method)
	}
	s.id = res.Thread.ID
	return nil
}

// versionOf is the version in Codex's userAgent, "avenor/0.171.0 (…) …".
func versionOf(userAgent string) string {
	_, rest, ok := strings.Cut(userAgent, "/")
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, " ")
	return v
}

func (s *Session) codexName() string {
	if s.version != "" {
		return "codex " + s.version
	}
	return s.cfg.Binary
}

// callErr maps a failed handshake call to a *runtime.Error.
func (s *Session) callErr(stage string, err error) error {
	if errors.Is(err, jsonrpc.ErrClosed) {
		return s.exitedErr(stage)
	}
	var rpcErr *jsonrpc.RPCError
	if errors.As(err, &rpcErr) {
		text := strings.ToLower(rpcErr.Message)
		switch {
		case stage == "thread/resume" && (strings.Contains(text, "not found") || strings.Contains(text, "no rollout") || strings.Contains(text, "does not exist")):
			return runtime.Errorf(runtime.FaultUser, "%s: thread %q: %v (%s): %v",
				Name, s.cfg.ResumeThreadID, runtime.ErrSessionNotFound, stage, rpcErr)
		case rpcErr.Code == jsonrpc.CodeMethodNotFound || strings.Contains(text, "unknown variant") || strings.Contains(text, "unknown method"):
			return runtime.Errorf(runtime.FaultRuntime, "%s: %s does not serve %s: %v; avenor speaks the app-server protocol of codex %s; %s",
				Name, s.codexName(), stage, rpcErr, TestedVersion, installHint)
		}
		return runtime.Errorf(runtime.FaultRuntime, "%s: %s refused %s: %v", Name, s.codexName(), stage, rpcErr)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return runtime.Errorf(runtime.FaultRuntime, "%s: %s did not answer %s within %s%s", Name, s.codexName(), stage, s.cfg.InitTimeout, s.stderr())
	}
	return runtime.Errorf(runtime.FaultRuntime, "%s: %s: %v%s", Name, stage, err, s.stderr())
}

// exitedErr is the error of an app-server that exited during stage.
func (s *Session) exitedErr(stage string) error {
	status := agentproc.ExitStatus(s.proc, exitWait)
	msg := fmt.Sprintf("%s: %s app-server exited during %s (%s)", Name, s.cfg.Binary, stage, status)
	if stage == "initialize" {
		msg += fmt.Sprintf("; is it a Codex CLI with `codex app-server` (tested with %s)? %s", TestedVersion, installHint)
	}
	return runtime.Errorf(runtime.FaultRuntime, "%s%s", msg, s.stderr())
}

// stderr is the tail of the app-server's stderr, for errors.
func (s *Session) stderr() string { return stderrTail(s.proc.StderrTail()) }

func stderrTail(tail string) string {
	out := agentproc.LastLines(tail, agentproc.ExitReportLines, agentproc.ExitReportBytes)
	if out == "" {
		return ""
	}
	return "\nstderr:\n" + out
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// frameError: a line that is not a message. Over-long lines are dropped
// with a warning; anything else counts as an unknown frame.
func (s *Session) frameError(err error) {
	if errors.Is(err, agentproc.ErrLineTooLong) {
		s.warn(fmt.Sprintf("%s: codex wrote a line over the %d-byte limit; it was dropped", Name, MaxLineBytes))
		return
	}
	s.unknown.Add(1)
	s.log.Debug("unusable line from codex", "error", err)
}

// ID is the Codex thread id.
func (s *Session) ID() string { return s.id }

// Process names the app-server's process and group.
func (s *Session) Process() runtime.ProcessInfo {
	return runtime.ProcessInfo{PID: s.proc.PID(), PGID: s.proc.PGID(), Binary: s.cfg.Binary, Version: s.version}
}

// StartFields adds Codex's version to session.start.
func (s *Session) StartFields() map[string]any {
	f := map[string]any{"runtime": "codex"}
	if s.version != "" {
		f["runtime_version"] = s.version
	}
	return f
}

// UnknownFrames is how many frames had no mapping so far.
func (s *Session) UnknownFrames() int64 { return s.unknown.Load() }

// emit sends an event in stream order; between turns events are held for
// the next turn, so none lands outside a turn's session.start…session.end.
func (s *Session) emit(ev runtime.Event) { s.gate.Emit(ev) }

func (s *Session) warn(msg string) {
	s.log.Warn(msg)
	s.emit(runtime.NewEvent(runtime.EventWarning, map[string]any{"source": "backend", "message": msg}))
}

// Prompt runs one turn: turn/start, then events until turn/completed. On
// Cancel (or ctx ending) it sends turn/interrupt once, answers a pending
// approval "cancel", and waits CancelWait for turn/completed; an
// app-server that does not end the turn by then is killed with its group.
func (s *Session) Prompt(ctx context.Context, in runtime.Turn) (runtime.TurnResult, error) {
	fail := runtime.TurnResult{StopReason: runtime.StopError}
	rt, err := s.Runner.Begin(ctx)
	if err != nil {
		return fail, err
	}
	defer s.Runner.End(rt)
	// A cancel since Begin found no turnState: it waits for the turn id
	// like any other. One from here on finds t and sets wantInterrupt.
	t := &turnState{rt: rt, done: make(chan struct{}), wantInterrupt: rt.IsCancelled()}
	defer turn.Publish(&s.mu, &s.turn, t)()
	if rt.IsCancelled() { // cancelled while starting: Codex was asked nothing
		return runtime.TurnResult{StopReason: runtime.StopCancelled, Extra: s.extra()}, nil
	}
	input := []any{userInput{Type: "text", Text: in.Text}}
	for _, im := range in.Images {
		input = append(input, localImageInput{Type: "localImage", Path: im.Path})
	}
	return s.await(rt, t, "turn/start", s.conn.Go("turn/start", turnStartParams{ThreadID: s.id, Input: input, Effort: s.cfg.Effort}))
}

// await waits for the turn t, which call (method) started, to end: its
// turn/completed, the app-server's exit or an overdue cancel.
func (s *Session) await(rt *turn.Turn, t *turnState, method string, call *jsonrpc.Call) (runtime.TurnResult, error) {
	fail := runtime.TurnResult{StopReason: runtime.StopError}
	started := call.Done()
	for {
		select {
		case <-t.done:
			return t.result, t.err
		case <-started:
			started = nil
			var res turnStartResult
			if err := call.Result(&res); err != nil {
				if errors.Is(err, jsonrpc.ErrClosed) {
					e := s.exitedErr(method)
					s.markDead(e)
					return fail, e
				}
				return fail, runtime.Errorf(runtime.FaultRuntime, "%s: %s refused %s: %v", Name, s.codexName(), method, err)
			}
			s.setTurnID(t, res.Turn.ID)
		case <-s.conn.Done():
			if isDone(t.done) {
				return t.result, nil
			}
			e := s.exitedErr("the turn")
			s.markDead(e)
			if rt.IsCancelled() {
				return runtime.TurnResult{StopReason: runtime.StopCancelled}, nil
			}
			return fail, e
		case <-rt.Overdue():
			return runtime.TurnResult{StopReason: runtime.StopCancelled, Extra: s.extra()}, nil
		}
	}
}

// overdue: the app-server did not end an interrupted turn within CancelWait.
func (s *Session) overdue(*turn.Turn) {
	msg := fmt.Sprintf("%s: %s did not end the interrupted turn within %s; stopped it and its process group", Name, s.codexName(), s.cfg.CancelWait)
	s.warn(msg)
	s.markDead(errors.New(msg))
	if err := agentproc.KillGroup(s.proc.PGID()); err != nil {
		s.log.Warn("killing codex's process group", "error", err)
	}
}

func (s *Session) markDead(err error) { s.Runner.MarkDead(err) }

// setTurnID records Codex's turn id and sends an interrupt a cancel asked
// for before the id was known.
func (s *Session) setTurnID(t *turnState, id string) {
	s.mu.Lock()
	if t.id == "" {
		t.id = id
	}
	send := t.wantInterrupt && !t.interruptSent && t.id != ""
	t.interruptSent = t.interruptSent || send
	s.mu.Unlock()
	if send {
		s.interrupt(t.id)
	}
}

// interruptTurn is the runner's Interrupt: turn/interrupt once (a repeated
// interrupt can stay pending forever, codex #36926), as soon as the turn
// id is known. Pending approvals end with the turn's context.
func (s *Session) interruptTurn(rt *turn.Turn) {
	s.mu.Lock()
	t := s.turn
	if t == nil || t.rt != rt {
		s.mu.Unlock() // Prompt has not recorded it yet and will see it cancelled
		return
	}
	t.wantInterrupt = true
	send := t.id != "" && !t.interruptSent
	t.interruptSent = t.interruptSent || send
	id := t.id
	s.mu.Unlock()
	if send {
		s.interrupt(id)
	}
}

func (s *Session) interrupt(turnID string) {
	// Not waited for: turn/completed (interrupted) ends the turn.
	call := s.conn.Go("turn/interrupt", interruptParams{ThreadID: s.id, TurnID: turnID})
	go func() {
		<-call.Done()
		if err := call.Result(nil); err != nil {
			s.log.Debug("turn/interrupt", "error", err)
		}
	}()
}

// Close interrupts a turn in flight and stops the app-server with its
// process group (stdin closing first: it exits on EOF).
func (s *Session) Close(context.Context) error {
	s.shutdown()
	return nil
}

func (s *Session) shutdown() {
	s.Runner.Close(procsession.Stop{Conn: s.conn, Proc: s.proc, Grace: s.cfg.StopGrace, Log: s.log, What: "stopping codex",
		Then: func() {
			s.log.Debug("codex session closed", "thread", s.id, "unknown_frames", s.unknown.Load())
		}}.Run)
}

// extra is what every session.end carries beyond the contract: the frames
// without a mapping so far and Codex's version (protocol drift).
func (s *Session) extra() map[string]any {
	return map[string]any{"unknown_frames": s.unknown.Load(), "runtime_version": s.version}
}

// rawJSON keeps a payload as parsed JSON for an event field.
func rawJSON(params json.RawMessage) any {
	var v any
	if len(params) > 0 && json.Unmarshal(params, &v) != nil {
		return string(params)
	}
	return v
}
