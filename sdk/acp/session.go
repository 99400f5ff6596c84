package acp

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
	"github.com/avenor-go/avenor/sdk/procsession"
	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/turn"
)

// Config is how to launch and drive one ACP agent. Zero values are valid
// defaults except where a field says it is required.
type Config struct {
	// Backend is the backend's name, e.g. "opencode-acp", for messages.
	// Required.
	Backend string
	// Binary is the agent CLI: a name looked up in the plugin's PATH, or a
	// path. Required.
	Binary string
	// Args are the CLI's arguments, e.g. ["acp", "--pure"].
	Args []string
	// Env is the CLI's full environment; nil means the plugin's.
	Env []string
	// Dir is the absolute working directory: the process's, and the cwd of
	// the ACP session. Required.
	Dir string
	// InstallHint says what to install when Binary is missing or does not
	// speak ACP, e.g. "install it with: npm install -g opencode-ai".
	InstallHint string
	// ClientVersion is clientInfo.version in initialize; "" means "0.0.1".
	ClientVersion string

	// AuthMethod, when set, is authenticated right after initialize
	// (Cursor's "cursor_login"). A failure fails Open as the user's fault.
	AuthMethod string
	// AuthHint is added to authentication failures: how to log in.
	AuthHint string

	// ResumeSessionID resumes that session instead of starting one:
	// session/resume when the agent advertises it, else session/load with
	// its replay kept out of the event stream.
	ResumeSessionID string
	// Model is applied once the session is open: through the config
	// option of category "model" (session/set_config_option) or, on
	// agents that still return a models object, session/set_model.
	Model string
	// Mode (avenor's --agent) is applied before Model: the config option of
	// category "mode", or session/set_mode.
	Mode string
	// WarnUnsupported: when the agent offers no way to set Model or Mode,
	// say so (a warning on stderr and an avenor.warning event) and go on
	// (docs/backends.md#gemini-acp-plugin-gemini) instead of failing Open.
	WarnUnsupported bool

	// MCPServers are given to the agent in session/new (or load, resume):
	// the launch context's. An http or sse server the agent does not
	// advertise (mcpCapabilities) fails Open as the user's to fix.
	MCPServers []runtime.MCPServer
	// Sandbox, when active, is the boundary the agent is launched inside
	// (agentproc.Spec.Sandbox); zero launches it as always.
	Sandbox runtime.Sandbox

	// Extensions serve agent→client methods beyond ACP — requests and
	// notifications alike, such as Cursor's cursor/ask_question — by
	// method name. They run in stream order, like every handler.
	Extensions map[string]Extension

	// InitTimeout bounds initialize and authenticate; <= 0 means
	// DefaultInitTimeout. Cold starts of an agent can take tens of seconds.
	InitTimeout time.Duration
	// SessionTimeout bounds session/new, load, resume and the mode and
	// model calls; <= 0 means DefaultSessionTimeout.
	SessionTimeout time.Duration
	// CancelWait is how long a cancelled turn waits for the agent's
	// "cancelled" answer before the agent's process group is killed;
	// <= 0 means DefaultCancelWait.
	CancelWait time.Duration
	// StopGrace is the grace of each step of stopping the agent (stdin
	// closed, SIGTERM, SIGKILL); <= 0 means DefaultStopGrace.
	StopGrace time.Duration
	// Logger receives diagnostics and the agent's stderr; nil means the
	// host's logger.
	Logger hclog.Logger
}

// Extension serves one vendor method. For a request it returns the result
// (or an error); for a notification the result is ignored. ctx ends when
// the agent withdraws the request, the turn is cancelled or the session
// closes.
type Extension func(ctx context.Context, s *Session, method string, params json.RawMessage) (any, *RPCError)

// Defaults of Config.
const (
	DefaultInitTimeout    = 60 * time.Second
	DefaultSessionTimeout = 60 * time.Second
	DefaultCancelWait     = 3 * time.Second
	DefaultStopGrace      = 2 * time.Second
)

// Bounds of a session.
const (
	// noiseTimeout: once the agent has written something that is not ACP
	// before answering initialize, it gets this long to start speaking
	// ACP; a CLI without ACP support (or showing a TUI) fails fast.
	noiseTimeout = 5 * time.Second
	// maxBuffered bounds the events held between turns (during Open and
	// after a turn ended), which are emitted when the next turn starts.
	maxBuffered = 512
	// replayQuiet: after session/load, the replay is over when no update
	// has come for this long (Gemini replays after answering).
	replayQuiet = 250 * time.Millisecond
	// replayMax bounds that wait.
	replayMax = 3 * time.Second
	// exitWait bounds the wait for an agent that closed its output to be
	// reaped, for its exit status and stderr in the error.
	exitWait = 2 * time.Second
)

// noiseTimeoutForTest is noiseTimeout; tests shorten it.
var noiseTimeoutForTest = noiseTimeout

// Session is a runtime.Session over one ACP agent process.
type Session struct {
	cfg    Config
	host   runtime.Host
	log    hclog.Logger
	proc   *agentproc.Process
	conn   *Conn
	client *Client
	mapper *mapper

	id   string
	init InitializeResult

	setupMu sync.Mutex
	setup   SessionSetup

	// replaying: a session/load replay is being discarded.
	replaying  atomic.Bool
	lastReplay atomic.Int64 // unix nanos of the last discarded update
	replayed   atomic.Int64
	unknown    atomic.Int64 // frames without a mapping (avenor.native)

	noiseMu sync.Mutex
	noise   []string
	noisy   chan struct{} // closed at the first non-ACP output
	noisyMu sync.Once

	gate  *turn.Gate   // keeps events inside turns
	turns *turn.Runner // the turn in flight, cancel, grace then kill, close

	onClose []func() // run once the agent is stopped
}

var _ runtime.Session = (*Session)(nil)

// Open starts the agent, initializes it, authenticates when configured,
// opens (or resumes) the session and applies mode and model. Every failure
// is a *runtime.Error naming the backend and the binary; the agent never
// outlives a failed Open.
func Open(ctx context.Context, cfg Config, host runtime.Host) (*Session, error) {
	if cfg.Backend == "" || cfg.Binary == "" || cfg.Dir == "" {
		return nil, runtime.Errorf(runtime.FaultPlugin, "acp: Config needs Backend, Binary and Dir")
	}
	procsession.Default(&cfg.InitTimeout, DefaultInitTimeout)
	procsession.Default(&cfg.SessionTimeout, DefaultSessionTimeout)
	procsession.Default(&cfg.CancelWait, DefaultCancelWait)
	procsession.Default(&cfg.StopGrace, DefaultStopGrace)
	if cfg.ClientVersion == "" {
		cfg.ClientVersion = "0.0.1"
	}
	s := &Session{cfg: cfg, host: host, mapper: newMapper(), noisy: make(chan struct{})}
	sk := procsession.New(procsession.Config{Backend: cfg.Backend, Host: host, Logger: cfg.Logger, MaxHeld: maxBuffered,
		Grace: cfg.CancelWait, OnOverdue: s.overdue})
	s.log, s.gate, s.turns = sk.Log, sk.Gate, sk.Runner
	log := s.log

	proc, err := procsession.Start(cfg.Backend, agentproc.Spec{
		Path: cfg.Binary, Args: cfg.Args, Dir: cfg.Dir, Env: cfg.Env,
		InstallHint: cfg.InstallHint, CancelGrace: cfg.StopGrace, Logger: log.Named(cfg.Binary),
		Sandbox: cfg.Sandbox,
	})
	if err != nil {
		return nil, err
	}
	s.proc = proc
	// Tell the host at once: if this plugin dies during a slow initialize,
	// the host still kills the agent's group.
	procsession.Record(host, s.Process())
	s.conn = NewConn(ProcessLines(proc.Lines()), proc.Stdin(), s, ConnOptions{Logger: log, OnFrameError: s.frameError})
	s.client = NewClient(s.conn)
	s.client.SetMCPServers(cfg.MCPServers)

	start := time.Now()
	if err := s.handshake(ctx); err != nil {
		s.shutdown()
		return nil, err
	}
	log.Debug("acp session open", "session_id", s.id, "agent", s.agentName(), "took", time.Since(start))
	return s, nil
}

// handshake runs initialize, authenticate, the session call, mode and model.
func (s *Session) handshake(ctx context.Context) error {
	cfg := &s.cfg
	if err := s.initialize(ctx); err != nil {
		return err
	}
	s.log.Debug("acp initialize answered", "agent", s.agentName())
	if cfg.AuthMethod != "" {
		actx, cancel := context.WithTimeout(ctx, cfg.InitTimeout)
		err := s.client.Authenticate(actx, cfg.AuthMethod)
		cancel()
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return s.exitedErr("authenticate")
			}
			return runtime.Errorf(runtime.FaultUser, "%s: authentication with %q failed: %v%s", cfg.Backend, cfg.AuthMethod, err, hint(cfg.AuthHint)).WithCode(runtime.CodeAuthRequired)
		}
	}

	if err := s.checkMCPTransports(); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, cfg.SessionTimeout)
	defer cancel()
	var setup SessionSetup
	var err error
	stage := "session/new"
	switch {
	case cfg.ResumeSessionID == "":
		setup, err = s.client.NewSession(sctx, cfg.Dir)
	case s.init.AgentCapabilities.SessionCapabilities.CanResume():
		stage = "session/resume"
		setup, err = s.client.ResumeSession(sctx, cfg.ResumeSessionID, cfg.Dir)
	case s.init.AgentCapabilities.LoadSession:
		stage = "session/load"
		s.replaying.Store(true)
		setup, err = s.client.LoadSession(sctx, cfg.ResumeSessionID, cfg.Dir)
	default:
		return runtime.Errorf(runtime.FaultUser, "%s: %s cannot resume sessions (it advertises neither session/resume nor session/load); start a new session instead",
			cfg.Backend, s.agentName())
	}
	if err != nil {
		return s.sessionErr(stage, err)
	}
	s.id = setup.SessionID
	s.setupMu.Lock()
	s.setup = setup
	s.setupMu.Unlock()
	if s.replaying.Load() {
		s.awaitReplay(sctx)
	}
	if err := s.applyMode(sctx); err != nil {
		return err
	}
	return s.applyModel(sctx)
}

// checkMCPTransports refuses an http or sse MCP server the agent does not
// take: sent anyway, it would be dropped or fail later, unseen.
func (s *Session) checkMCPTransports() error {
	caps := s.init.AgentCapabilities.MCPCapabilities
	for _, m := range s.cfg.MCPServers {
		if (m.Type == runtime.MCPHTTP && !caps.HTTP) || (m.Type == runtime.MCPSSE && !caps.SSE) {
			return runtime.Errorf(runtime.FaultUser, "%s: %s does not take %s MCP servers (server %q); give it a stdio server",
				s.cfg.Backend, s.agentName(), m.Type, m.Name).WithCode(runtime.CodeUnsupported)
		}
	}
	return nil
}

func hint(h string) string {
	if h == "" {
		return ""
	}
	return "; " + h
}

func space(h string) string {
	if h == "" {
		return ""
	}
	return " " + h
}

// notFound reports whether an agent's error says the session is unknown.
func notFound(e *RPCError) bool {
	text := strings.ToLower(e.Message + " " + string(e.Data))
	for _, s := range []string{"not found", "no previous session", "does not exist", "unknown session", "no such session"} {
		if strings.Contains(text, s) {
			return true
		}
	}
	return e.Code == CodeResourceNotFound
}

func (s *Session) agentName() string {
	if ai := s.init.AgentInfo; ai != nil && ai.Name != "" {
		if ai.Version != "" {
			return ai.Name + " " + ai.Version
		}
		return ai.Name
	}
	return s.cfg.Binary
}

// initialize calls initialize, failing fast when the process exits or
// writes something other than ACP without ever answering.
func (s *Session) initialize(ctx context.Context) error {
	cfg := &s.cfg
	call := s.client.InitializeCall(Implementation{Name: "avenor", Version: cfg.ClientVersion})
	timeout := time.NewTimer(cfg.InitTimeout)
	defer timeout.Stop()
	noisy := s.noisy
	var fast <-chan time.Time
	select {
	case <-call.Done():
	case <-ctx.Done():
		call.Abandon(context.Cause(ctx))
		return runtime.Errorf(runtime.FaultRuntime, "%s: initialize interrupted: %v", cfg.Backend, context.Cause(ctx))
	case <-timeout.C:
		call.Abandon(ErrClosed)
		return s.noACP(fmt.Sprintf("did not answer ACP initialize within %s", cfg.InitTimeout))
	case <-noisy:
		t := time.NewTimer(noiseTimeoutForTest)
		defer t.Stop()
		fast = t.C
		select {
		case <-call.Done():
		case <-fast:
			call.Abandon(ErrClosed)
			return s.noACP(fmt.Sprintf("wrote output that is not ACP and did not answer initialize within %s", noiseTimeoutForTest))
		case <-timeout.C:
			call.Abandon(ErrClosed)
			return s.noACP(fmt.Sprintf("did not answer ACP initialize within %s", cfg.InitTimeout))
		case <-ctx.Done():
			call.Abandon(context.Cause(ctx))
			return runtime.Errorf(runtime.FaultRuntime, "%s: initialize interrupted: %v", cfg.Backend, context.Cause(ctx))
		}
	}
	var res InitializeResult
	if err := call.Result(&res); err != nil {
		if errors.Is(err, ErrClosed) {
			return s.exitedErr("initialize")
		}
		var rpcErr *RPCError
		if errors.As(err, &rpcErr) {
			return s.noACP(fmt.Sprintf("refused ACP initialize: %v", rpcErr))
		}
		return s.noACP(fmt.Sprintf("answered initialize with something unusable: %v", err))
	}
	if res.ProtocolVersion != ProtocolVersion {
		return runtime.Errorf(runtime.FaultRuntime, "%s: %s speaks ACP protocol version %d; avenor speaks %d%s",
			cfg.Backend, cfg.Binary, res.ProtocolVersion, ProtocolVersion, hint(cfg.InstallHint))
	}
	s.init = res
	return nil
}

// noACP is the error of an agent that does not speak ACP.
func (s *Session) noACP(what string) error {
	return runtime.Errorf(runtime.FaultRuntime, "%s: %s %s; is it a version with ACP support?%s%s",
		s.cfg.Backend, s.cfg.Binary, what, space(s.cfg.InstallHint), s.diagnostics(false))
}

// exitedErr is the error of an agent that exited during stage.
func (s *Session) exitedErr(stage string) error {
	status := agentproc.ExitStatus(s.proc, exitWait)
	msg := fmt.Sprintf("%s: %s exited during %s (%s)", s.cfg.Backend, s.cfg.Binary, stage, status)
	if stage == "initialize" {
		msg += "; is it a version with ACP support?" + space(s.cfg.InstallHint)
	}
	return runtime.Errorf(runtime.FaultRuntime, "%s%s", msg, s.diagnostics(true))
}

// diagnostics is the non-ACP output and the stderr tail, for errors.
func (s *Session) diagnostics(stderr bool) string {
	var b strings.Builder
	s.noiseMu.Lock()
	if len(s.noise) > 0 {
		fmt.Fprintf(&b, "\nnon-ACP output on stdout: %s", strings.Join(s.noise, " | "))
	}
	s.noiseMu.Unlock()
	if stderr {
		if tail := agentproc.StderrReport(s.proc); tail != "" {
			fmt.Fprintf(&b, "\nstderr:\n%s", tail)
		}
	}
	return b.String()
}

// sessionErr maps a failed session/new, load or resume.
func (s *Session) sessionErr(stage string, err error) error {
	cfg := &s.cfg
	if errors.Is(err, ErrClosed) {
		return s.exitedErr(stage)
	}
	var rpcErr *RPCError
	if errors.As(err, &rpcErr) {
		switch {
		case rpcErr.Code == CodeAuthRequired:
			return runtime.Errorf(runtime.FaultUser, "%s: %s needs authentication: %v%s", cfg.Backend, s.agentName(), rpcErr, hint(cfg.AuthHint)).WithCode(runtime.CodeAuthRequired)
		case stage != "session/new" && notFound(rpcErr):
			return runtime.Errorf(runtime.FaultUser, "%s: session %q: %v (%s): %v",
				cfg.Backend, cfg.ResumeSessionID, runtime.ErrSessionNotFound, stage, rpcErr)
		}
		return runtime.Errorf(runtime.FaultRuntime, "%s: %s refused %s: %v", cfg.Backend, s.agentName(), stage, rpcErr)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return runtime.Errorf(runtime.FaultRuntime, "%s: %s did not answer %s within %s%s", cfg.Backend, s.agentName(), stage, cfg.SessionTimeout, s.diagnostics(true))
	}
	return runtime.Errorf(runtime.FaultRuntime, "%s: %s: %v", cfg.Backend, stage, err)
}

// awaitReplay lets a session/load replay that continues after the answer
// (Gemini) drain before the first turn, so none of it reaches the events.
func (s *Session) awaitReplay(ctx context.Context) {
	start := time.Now()
	for time.Since(start) < replayMax && ctx.Err() == nil {
		last := time.Unix(0, s.lastReplay.Load())
		if last.Before(start) {
			last = start
		}
		if time.Since(last) >= replayQuiet {
			break
		}
		time.Sleep(replayQuiet / 5)
	}
	s.log.Debug("session/load replay discarded", "updates", s.replayed.Load())
}

// applyMode applies Config.Mode (--agent).
func (s *Session) applyMode(ctx context.Context) error {
	mode := s.cfg.Mode
	if mode == "" {
		return nil
	}
	s.setupMu.Lock()
	setup := s.setup
	s.setupMu.Unlock()
	if opt := findOption(setup.ConfigOptions, "mode"); opt != nil {
		if opt.Current() == mode {
			return nil
		}
		if vals := opt.Values(); len(vals) > 0 && !contains(vals, mode) {
			return runtime.Errorf(runtime.FaultUser, "%s: agent %q is not offered by %s; it offers: %s", s.cfg.Backend, mode, s.agentName(), listOrNone(vals))
		}
		return s.setOption(ctx, opt.ID, mode, "agent")
	}
	if setup.Modes != nil {
		if setup.Modes.CurrentModeID == mode {
			return nil
		}
		if ids := setup.Modes.IDs(); len(ids) > 0 && !contains(ids, mode) {
			return runtime.Errorf(runtime.FaultUser, "%s: agent %q is not offered by %s; it offers the modes: %s", s.cfg.Backend, mode, s.agentName(), listOrNone(ids))
		}
		if err := s.client.SetMode(ctx, s.id, mode); err != nil {
			return s.setErr("agent", mode, err)
		}
		return nil
	}
	return s.unsupported("agent", mode)
}

// applyModel applies Config.Model.
func (s *Session) applyModel(ctx context.Context) error {
	model := s.cfg.Model
	if model == "" {
		return nil
	}
	s.setupMu.Lock()
	setup := s.setup
	s.setupMu.Unlock()
	if opt := findOption(setup.ConfigOptions, "model"); opt != nil {
		if opt.Current() == model {
			return nil
		}
		return s.setOption(ctx, opt.ID, model, "model")
	}
	if setup.Models != nil {
		if setup.Models.CurrentModelID == model {
			return nil
		}
		if err := s.client.SetModel(ctx, s.id, model); err != nil {
			return s.setErr("model", model, err)
		}
		return nil
	}
	return s.unsupported("model", model)
}

func (s *Session) setOption(ctx context.Context, id, value, what string) error {
	opts, err := s.client.SetConfigOption(ctx, s.id, id, value)
	if err != nil {
		return s.setErr(what, value, err)
	}
	if opts != nil {
		s.setupMu.Lock()
		s.setup.ConfigOptions = opts
		s.setupMu.Unlock()
	}
	return nil
}

func (s *Session) setErr(what, value string, err error) error {
	if errors.Is(err, ErrClosed) {
		return s.exitedErr("setting the " + what)
	}
	var rpcErr *RPCError
	if errors.As(err, &rpcErr) && rpcErr.Code == CodeMethodNotFound {
		// The running version does not serve the call after all.
		return s.unsupported(what, value)
	}
	if errors.As(err, &rpcErr) {
		return runtime.Errorf(runtime.FaultUser, "%s: %s refused %s %q: %v", s.cfg.Backend, s.agentName(), what, value, rpcErr)
	}
	return runtime.Errorf(runtime.FaultRuntime, "%s: setting %s %q: %v", s.cfg.Backend, what, value, err)
}

// unsupported: the agent offers no way to set what.
func (s *Session) unsupported(what, value string) error {
	msg := fmt.Sprintf("%s: --%s %q has no effect: %s offers no way to choose the %s", s.cfg.Backend, what, value, s.agentName(), what)
	if !s.cfg.WarnUnsupported {
		return &runtime.Error{Fault: runtime.FaultUser, Message: msg, Code: runtime.CodeUnsupported}
	}
	s.Warn(msg + "; its own configuration decides")
	return nil
}

// Warn reports something the user should know, never silently: on the
// plugin's stderr (which the host shows) and as an avenor.warning event.
func (s *Session) Warn(msg string) {
	s.log.Warn(msg)
	s.emit(runtime.NewEvent(runtime.EventWarning, map[string]any{"source": "backend", "message": msg}))
}

// ID is the ACP session id.
func (s *Session) ID() string { return s.id }

// Initialized is the agent's answer to initialize.
func (s *Session) Initialized() InitializeResult { return s.init }

// Setup is the session's current modes, models and config options.
func (s *Session) Setup() SessionSetup {
	s.setupMu.Lock()
	defer s.setupMu.Unlock()
	return s.setup
}

// Logger is the session's logger.
func (s *Session) Logger() hclog.Logger { return s.log }

// Process names the agent's process and group.
func (s *Session) Process() runtime.ProcessInfo {
	p := runtime.ProcessInfo{PID: s.proc.PID(), PGID: s.proc.PGID(), Binary: s.cfg.Binary}
	if ai := s.init.AgentInfo; ai != nil {
		p.Version = ai.Version
	}
	return p
}

// ModelEndpoints implements runtime.ModelEndpointReporter: the model
// endpoints the backend's Configure put in the sandbox (none unless it
// was asked for --sandbox-network model).
func (s *Session) ModelEndpoints() []runtime.NetDest { return s.cfg.Sandbox.ModelEndpoints }

// StartFields adds the agent's name and version to session.start.
func (s *Session) StartFields() map[string]any {
	f := map[string]any{}
	if ai := s.init.AgentInfo; ai != nil {
		if ai.Name != "" {
			f["runtime"] = ai.Name
		}
		if ai.Version != "" {
			f["runtime_version"] = ai.Version
		}
	}
	return f
}

// Stats says how many frames the session passed on unmapped, dropped as
// unusable, or discarded as a session/load replay.
func (s *Session) Stats() (unknown, bad, replayed int64) {
	return s.unknown.Load(), s.conn.Stats().BadFrames, s.replayed.Load()
}

// Emit sends an event to the host in stream order. Between turns (while
// opening, and after a turn's answer) events are held and sent when the
// next turn starts, so none lands before session.start or after the
// session.end of its turn.
func (s *Session) Emit(ev runtime.Event) { s.emit(ev) }

func (s *Session) emit(ev runtime.Event) { s.gate.Emit(ev) }

// AnnounceTool emits a synthetic tool.call for a tool call not seen before
// (toolCallId, title, kind… in call), so that a request about it (a
// permission, a question) is always correlated with a tool call.
func (s *Session) AnnounceTool(call map[string]any) {
	id, _ := call["toolCallId"].(string)
	if ev, ok := s.mapper.announce(id, s.id, call); ok {
		s.emit(ev)
	}
}

// AskPermission asks the host. Requests are already serialised: they are
// handled one at a time, in stream order.
func (s *Session) AskPermission(ctx context.Context, req runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	s.gate.Flush()
	return s.host.AskPermission(ctx, req)
}

// turnScoped is ctx, also ended by the cancel of the turn in flight.
func (s *Session) turnScoped(ctx context.Context) (context.Context, func()) {
	t := s.turns.Current()
	if t == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(t.Context(), func() { cancel(context.Canceled) })
	return ctx, func() { stop(); cancel(nil) }
}

// HandleNotification implements Handler.
func (s *Session) HandleNotification(method string, params json.RawMessage) {
	switch {
	case method == "session/update":
		s.update(params)
	case s.cfg.Extensions[method] != nil:
		ctx, stop := s.turnScoped(context.Background())
		_, _ = s.cfg.Extensions[method](ctx, s, method, params)
		stop()
	default:
		s.passNative(method, params)
	}
}

// HandleRequest implements Handler.
func (s *Session) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, *RPCError) {
	switch {
	case method == "session/request_permission":
		return s.handlePermission(ctx, RequestID(ctx), params)
	case s.cfg.Extensions[method] != nil:
		ctx, stop := s.turnScoped(ctx)
		defer stop()
		return s.cfg.Extensions[method](ctx, s, method, params)
	}
	// fs/*, terminal/* (not advertised) and anything else: say no at once,
	// so the agent is never left waiting, and keep a trace.
	s.passNative(method, params)
	return nil, MethodNotFound(method)
}

func (s *Session) update(params json.RawMessage) {
	if s.replaying.Load() {
		s.replayed.Add(1)
		s.lastReplay.Store(time.Now().UnixNano())
		return
	}
	events, known, err := s.mapper.mapUpdate(params)
	if err != nil {
		s.log.Debug("malformed session/update", "error", err)
		s.passNative("session/update", params)
		return
	}
	if !known {
		s.unknown.Add(1)
	}
	for _, ev := range events {
		s.emit(ev)
	}
}

// passNative forwards a frame without a mapping as avenor.native.
func (s *Session) passNative(method string, params json.RawMessage) {
	s.unknown.Add(1)
	var payload any
	if len(params) > 0 && json.Unmarshal(params, &payload) != nil {
		payload = string(params)
	}
	sid := ""
	if m, ok := payload.(map[string]any); ok {
		sid, _ = m["sessionId"].(string)
	}
	s.emit(nativeEvent(method, sid, payload))
}

// frameError records output that is not ACP.
func (s *Session) frameError(err error) {
	var fe *FrameError
	if errors.As(err, &fe) && errors.Is(fe.Err, agentproc.ErrLineTooLong) {
		s.Warn(fmt.Sprintf("%s: %s wrote a line over the %d-byte limit; it was dropped", s.cfg.Backend, s.cfg.Binary, agentproc.DefaultMaxLineBytes))
		return
	}
	s.noiseMu.Lock()
	if len(s.noise) < 5 && errors.As(err, &fe) {
		s.noise = append(s.noise, fe.Frame)
	}
	s.noiseMu.Unlock()
	s.noisyMu.Do(func() { close(s.noisy) })
}

// Prompt runs one turn: session/prompt, whose answer ends it. On Cancel (or
// ctx ending) it sends session/cancel, answers a pending permission request
// "cancelled" and waits CancelWait for the agent's answer; an agent that
// does not answer in time is killed with its process group.
func (s *Session) Prompt(ctx context.Context, in runtime.Turn) (runtime.TurnResult, error) {
	t, err := s.turns.Begin(ctx)
	if err != nil {
		return runtime.TurnResult{StopReason: runtime.StopError}, err
	}
	defer s.turns.End(t)
	// Whatever came before this turn is not part of a replay any more.
	s.replaying.Store(false)
	if t.IsCancelled() {
		return runtime.TurnResult{StopReason: runtime.StopCancelled}, nil
	}
	// The turn is over in stream order when its answer arrives: what the
	// agent sends after it is held for the next turn.
	call := s.client.PromptCall(s.id, in.Text, func() { s.turns.Detach(t) })
	// session/cancel is sent from here, after session/prompt is written,
	// so the agent never reads a cancel before the prompt it cancels.
	cancelled := t.Cancelled()
	for {
		select {
		case <-call.Done():
			return s.turnResult(call)
		case <-cancelled:
			cancelled = nil
			if err := s.client.Cancel(s.id); err != nil {
				s.log.Debug("sending session/cancel failed", "error", err)
			}
		case <-t.Overdue():
			call.Abandon(ErrClosed)
			return runtime.TurnResult{StopReason: runtime.StopCancelled}, nil
		}
	}
}

// overdue: the agent did not end a cancelled turn within CancelWait.
func (s *Session) overdue(*turn.Turn) {
	msg := fmt.Sprintf("%s: %s did not end the cancelled turn within %s; stopped it and its process group", s.cfg.Backend, s.agentName(), s.cfg.CancelWait)
	s.Warn(msg)
	s.kill(errors.New(msg))
}

// turnResult converts the answer to session/prompt.
func (s *Session) turnResult(call *Call) (runtime.TurnResult, error) {
	var res PromptResult
	err := call.Result(&res)
	if err == nil {
		return res.TurnResult(), nil
	}
	fail := runtime.TurnResult{StopReason: runtime.StopError}
	if errors.Is(err, ErrClosed) {
		e := s.exitedErr("the turn")
		s.markDead(e)
		return fail, e
	}
	var rpcErr *RPCError
	if errors.As(err, &rpcErr) {
		return fail, runtime.Errorf(runtime.FaultRuntime, "%s: %s answered session/prompt with an error: %v", s.cfg.Backend, s.agentName(), rpcErr)
	}
	return fail, runtime.Errorf(runtime.FaultRuntime, "%s: %v", s.cfg.Backend, err)
}

func (s *Session) markDead(err error) { s.turns.MarkDead(err) }

// kill stops the agent at once, with its process group.
func (s *Session) kill(why error) {
	s.markDead(why)
	if err := agentproc.KillGroup(s.proc.PGID()); err != nil {
		s.log.Warn("killing the agent's process group", "error", err)
	}
}

// Cancel asks the turn in flight (or starting) to stop; Prompt then
// returns once the agent answers (or is killed). It does not wait.
func (s *Session) Cancel(ctx context.Context) error { return s.turns.Cancel(ctx) }

// TurnStarting implements runtime.TurnStarter.
func (s *Session) TurnStarting() { s.turns.TurnStarting() }

// Close ends the session: the turn in flight is cancelled, pending
// requests are answered, the agent's stdin is closed, and it is stopped
// with its whole process group.
func (s *Session) Close(ctx context.Context) error {
	s.shutdown()
	return nil
}

func (s *Session) shutdown() {
	s.turns.Close(procsession.Stop{Conn: s.conn, Proc: s.proc, Grace: s.cfg.StopGrace, Log: s.log, What: "stopping the agent",
		Then: func() {
			for _, f := range s.onClose {
				f()
			}
			unknown, bad, replayed := s.Stats()
			s.log.Debug("acp session closed", "session_id", s.id, "unknown_frames", unknown, "bad_frames", bad, "replayed", replayed)
		}}.Run)
}
