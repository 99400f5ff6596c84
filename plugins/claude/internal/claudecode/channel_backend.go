package claudecode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/plugins/claude/internal/channel"
	"github.com/avenor-go/avenor/sdk/mcpconfig"
	"github.com/avenor-go/avenor/sdk/procsession"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// ChannelName is the channel backend's name.
const ChannelName = "claude-channel"

// ExecutableEnv is set by the avenor host in every plugin process: the
// avenor executable, which .mcp.json names as the sidecar's command
// (docs/backends.md#claude-channel-plugin-claude-experimental). Without it (another host) the plugin names itself; it
// implements `claude-channel` too.
const ExecutableEnv = "AVENOR_EXECUTABLE"

// channelServerPrefix starts every .mcp.json entry of this backend;
// `avenor claude-channel-cleanup` removes what crashed sessions leave.
const channelServerPrefix = "avenor-channel-"

// Events of the channel backend (docs/events.md#backend-events).
const (
	EventChannelReady runtime.EventType = "agent.channel_ready"
	EventPromptQueued runtime.EventType = "agent.prompt_queued"
	EventReport       runtime.EventType = "agent.report"
	EventReply        runtime.EventType = "agent.reply"
	EventFinish       runtime.EventType = "agent.finish"
	EventStatus                         = runtime.EventAgentStatus
)

// Timings of the channel backend.
const (
	// devChannelWindow: the development-channel warning Claude Code shows
	// at start is accepted only within this window (docs/backends.md#claude-channel-plugin-claude-experimental).
	devChannelWindow = 30 * time.Second
	// finishSettle: after avenor_finish the turn ends at the transcript's
	// turn end, or this long after the finish at the latest.
	finishSettle = 2 * time.Second
	// brokerCloseWait bounds the broker's shutdown at Close.
	brokerCloseWait = 2 * time.Second
	// channelPermGrace: a permission dialog on screen that no channel
	// permission_request follows within this is answered from the screen.
	channelPermGrace = 2 * time.Second
	// channelReadyWait bounds Open's wait for the sidecar to register
	// after the TUI is up.
	channelReadyWait = 30 * time.Second
	// deathPoll is how often the session looks for a dead terminal between
	// turns, to remove its .mcp.json entry promptly.
	deathPoll = 500 * time.Millisecond
)

// Screen texts of Claude Code 2.1.332 the channel backend answers.
const (
	devChannelDialog = "Loading development channels"         // DevChannelsDialog title; Enter = "I am using this for local development"
	mcpServerDialog  = "New MCP server found in this project" // Enter = "Use this MCP server"
)

// DeliveryOption is the backend option ([backends.claude-channel].options)
// choosing how prompts reach Claude once the channel is up:
//
//   - "both" (default, docs/backends.md#claude-channel-plugin-claude-experimental): pasted into the terminal and queued
//     as a continue control. Claude Code queues the channel copy while the
//     pasted turn runs and then acts on it again: every prompt is seen
//     twice (a second turn, a second permission prompt, and a cancel that
//     the queued copy outlives);
//   - "channel": queued only (pasted while the channel is not up yet);
//   - "terminal": pasted only.
const DeliveryOption = "prompt_delivery"

// Prompt delivery modes.
const (
	deliverBoth     = "both"
	deliverChannel  = "channel"
	deliverTerminal = "terminal"
)

func deliveryMode(options map[string]any) (string, error) {
	v, ok := options[DeliveryOption]
	if !ok || v == nil || v == "" {
		return deliverBoth, nil
	}
	switch s, _ := v.(string); s {
	case deliverBoth, deliverChannel, deliverTerminal:
		return s, nil
	}
	return "", runtime.Errorf(runtime.FaultUser, "%s: option %s = %v is not one of %q, %q, %q", ChannelName, DeliveryOption, v, deliverBoth, deliverChannel, deliverTerminal)
}

func NewChannelBackend() runtime.Backend { return &channelBackend{} }

type channelBackend struct {
	// launchEnv reads the plugin process's environment (AVENOR_EXECUTABLE);
	// tests replace it.
	getenv func(string) string
}

func (b *channelBackend) Info() runtime.BackendInfo {
	return runtime.BackendInfo{
		Name: ChannelName,
		Description: "Claude Code's interactive TUI with a development channel (experimental): " +
			"`claude --dangerously-load-development-channels server:avenor-channel-<id> --session-id <uuid> --permission-mode default`, " +
			"an MCP sidecar from .mcp.json relaying prompts, reports, finish and permissions through a per-session broker on 127.0.0.1",
		Capabilities: runtime.Supports(
			runtime.CapNewSessions, runtime.CapCancel, runtime.CapEventStreaming, runtime.CapModelSelection,
			runtime.CapSubprocessDiscovery, runtime.CapModelListing,
		).
			With(runtime.CapPrompt, runtime.Experimental).
			With(runtime.CapPermissionRelay, runtime.Experimental),
		ThinkingLevels: thinkingLevels,
		EventTypes: []runtime.EventType{runtime.EventMessageChunk, runtime.EventThoughtChunk, runtime.EventToolCall,
			runtime.EventToolCallUpdate, runtime.EventWarning, EventPromptSubmitted, EventPromptQueued,
			EventChannelReady, EventReport, EventReply, EventFinish, EventStatus},
	}
}

// Check is claude-stream's (Claude Code found and said so) plus tmux when
// the launcher is tmux, the default.
func (b *channelBackend) Check(ctx context.Context, req runtime.CheckRequest) runtime.Readiness {
	return checkTUI(ctx, req, ChannelName, launcherTmux)
}

// sidecarCommand is the .mcp.json entry: avenor (or this plugin) run as
// `claude-channel --run-id R --token T --broker-url U`.
func (b *channelBackend) sidecarCommand(runID, token, url string) (mcpconfig.Server, error) {
	getenv := b.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	exe := getenv(ExecutableEnv)
	if exe == "" {
		self, err := os.Executable()
		if err != nil {
			return mcpconfig.Server{}, fmt.Errorf("finding this plugin's executable for the channel sidecar (set %s): %w", ExecutableEnv, err)
		}
		exe = self
	}
	return mcpconfig.Server{Command: exe, Args: []string{SidecarCommand, "--run-id", runID, "--token", token, "--broker-url", url}}, nil
}

func (b *channelBackend) Open(ctx context.Context, req runtime.OpenRequest, host runtime.Host) (_ runtime.Session, err error) {
	if strings.TrimSpace(req.Dir) == "" {
		return nil, runtime.Errorf(runtime.FaultUser, "%s: no working directory given", ChannelName)
	}
	if req.ResumeSessionID != "" {
		return nil, runtime.Errorf(runtime.FaultUser, "%s cannot resume session %q: sessions live only while their terminal does; use claude-stream to resume across runs", ChannelName, req.ResumeSessionID)
	}
	delivery, err := deliveryMode(req.Options)
	if err != nil {
		return nil, err
	}
	ts, err := prepareTerminal(ctx, ChannelName, launcherTmux, req, host)
	if err != nil {
		return nil, err
	}
	log := ts.log

	// Everything set up from here is undone by cleanup, on every error.
	runID := newUUID()
	c := &channelCleanup{log: log}
	defer func() {
		if err != nil {
			c.run()
		}
	}()
	broker, err := channel.NewBroker(channel.Config{Logger: log.Named("broker")})
	if err != nil {
		return nil, runtime.Errorf(runtime.FaultRuntime, "%s: %v", ChannelName, err)
	}
	c.broker = broker
	token := broker.AddRun(runID)
	serverName := channelServerPrefix + runID[:8]
	entry, err := b.sidecarCommand(runID, token, broker.URL())
	if err != nil {
		return nil, runtime.Errorf(runtime.FaultRuntime, "%s: %v", ChannelName, err)
	}
	if c.tmpDir, err = os.MkdirTemp("", "avenor-claude-channel-*"); err != nil {
		return nil, runtime.Errorf(runtime.FaultRuntime, "%s: creating its temp dir: %v", ChannelName, err)
	}
	if err := mcpconfig.Upsert(filepath.Join(c.tmpDir, "mcp.json"), serverName, entry); err != nil {
		return nil, runtime.Errorf(runtime.FaultRuntime, "%s: %v", ChannelName, err)
	}
	c.mcpPath, c.serverName = mcpconfig.Path(req.Dir), serverName
	if err := mcpconfig.Upsert(c.mcpPath, serverName, entry); err != nil {
		c.mcpPath = ""
		return nil, runtime.Errorf(runtime.FaultUser, "%s: adding the channel server to %s: %v", ChannelName, mcpconfig.Path(req.Dir), err)
	}

	id := newUUID()
	// --settings approves our .mcp.json server for this process only:
	// without it Claude Code asks first ("New MCP server found in this
	// project", default answer: continue without it) and, once answered,
	// records the answer in the project's .claude/settings.local.json.
	approve, _ := json.Marshal(map[string]any{"enabledMcpjsonServers": []string{serverName}})
	args := []string{"--dangerously-load-development-channels", "server:" + serverName, "--settings", string(approve), "--session-id", id}
	args = append(append(args, optionalFlags(req)...), "--permission-mode", "default")
	pty, err := startTUI(ChannelName, ts.launch, "avenor-"+runID[:8], id, ts.bin, args, ts.env, req.Dir)
	if err != nil {
		return nil, err
	}
	pty.version, pty.host, pty.log = ts.version, host, log
	c.term = pty.term
	s := &channelSession{ptySession: pty, delivery: delivery, runID: runID, serverName: serverName, brokerURL: broker.URL(),
		broker: broker, cleanup: c, finishes: make(chan channel.FinishRequest, 1), stopPump: make(chan struct{}), pumpDone: make(chan struct{})}
	s.permCtx, s.permCancel = context.WithCancel(context.Background())
	procsession.Record(host, s.Process())
	go s.pump()
	if err := s.waitReady(ctx); err != nil {
		s.stop()
		return nil, err
	}
	s.waitChannel(ctx)
	s.opened.Store(true)
	return s, nil
}

// channelCleanup undoes Open: the .mcp.json entry, the temp dir, the
// terminal and the broker. Each part runs once; removeEntry may run early
// (the terminal died) and again at Close.
type channelCleanup struct {
	log        hclog.Logger
	broker     *channel.Broker
	tmpDir     string
	mcpPath    string
	serverName string
	term       terminal

	entryOnce, allOnce sync.Once
}

func (c *channelCleanup) removeEntry() {
	c.entryOnce.Do(func() {
		if c.mcpPath == "" {
			return
		}
		if _, err := mcpconfig.Remove(c.mcpPath, c.serverName); err != nil {
			c.log.Warn("could not remove the channel server from .mcp.json; run `avenor claude-channel-cleanup`", "file", c.mcpPath, "server", c.serverName, "error", err)
		}
	})
}

func (c *channelCleanup) run() {
	c.allOnce.Do(func() {
		if c.term != nil && !c.term.done() {
			c.term.kill(ptyKillGrace)
		}
		c.removeEntry()
		if c.tmpDir != "" {
			_ = os.RemoveAll(c.tmpDir)
		}
		if c.broker != nil {
			ctx, cancel := context.WithTimeout(context.Background(), brokerCloseWait)
			_ = c.broker.Close(ctx)
			cancel()
		}
	})
}

// channelSession is the TUI of the `claude` backend (whose screen,
// transcript, cancel and Close it reuses) plus the channel.
type channelSession struct {
	*ptySession
	delivery                     string // deliverBoth, deliverChannel or deliverTerminal
	runID, serverName, brokerURL string
	broker                       *channel.Broker
	cleanup                      *channelCleanup

	channelOn bool                       // Claude Code showed (and we accepted) the development-channel warning; set before Open returns
	warned    bool                       // the channel-off warning was emitted (Prompt only)
	ready     atomic.Bool                // the sidecar registered
	opened    atomic.Bool                // Open has returned
	relays    atomic.Int64               // channel permission requests received
	announced atomic.Bool                // agent.channel_ready was emitted
	inTurn    atomic.Bool                // a Prompt is running: finishes go to it
	finishes  chan channel.FinishRequest // the turn's avenor_finish

	permCtx    context.Context // channel permission asks; cancelled by stop
	permCancel context.CancelFunc
	permWG     sync.WaitGroup
	stopPump   chan struct{}
	pumpDone   chan struct{}
	stopOnce   sync.Once
}

func (s *channelSession) StartFields() map[string]any {
	return map[string]any{"runtime": "claude-code", "runtime_version": s.version, "dangerously_load": true,
		"terminal": string(s.launcher), "broker_url": s.brokerURL, "channel_run_id": s.runID, "server_name": s.serverName}
}

// waitReady accepts the development-channel warning (and the approval of
// our own .mcp.json server) and then waits for the input box like the
// claude backend.
func (s *channelSession) waitReady(ctx context.Context) error {
	start := time.Now()
	var lastKey time.Time
	for time.Since(start) < devChannelWindow {
		scr := s.term.screen()
		st := readScreen(scr)
		switch {
		case strings.Contains(scr, mcpServerDialog):
			// --settings should have approved our server; Enter here
			// would choose "Continue without using this MCP server".
			return runtime.Errorf(runtime.FaultRuntime, "%s: Claude Code asks to approve a project MCP server although --settings approved %s; approve it in %s once or remove the other servers from .mcp.json\nscreen:\n%s",
				ChannelName, s.serverName, "the project", lastLines(scr, 12))
		case strings.Contains(scr, devChannelDialog):
			// Claude Code shows the warning only when channels are on
			// for this account and build; without it the sidecar still
			// connects, but its notifications are dropped.
			s.channelOn = true
			// Claude Code ignores keys for a moment after a dialog
			// appears, so Enter is pressed again until it is gone.
			if time.Since(lastKey) >= ptyRetype {
				lastKey = time.Now()
				_ = s.term.send("\r")
			}
		case st.idle(), s.term.done(), strings.Contains(scr, "Do you trust the files in this folder?"):
			return s.ptySession.waitReady(ctx)
		}
		select {
		case <-ctx.Done():
			return runtime.Errorf(runtime.FaultRuntime, "%s: interrupted while starting Claude Code: %v", ChannelName, ctx.Err())
		case <-time.After(ptyPoll):
		}
	}
	scr := s.term.screen()
	if strings.Contains(scr, devChannelDialog) {
		return runtime.Errorf(runtime.FaultRuntime, "%s: Claude Code's development-channel warning was still open after %s\nscreen:\n%s", ChannelName, devChannelWindow, lastLines(scr, 12))
	}
	return s.ptySession.waitReady(ctx)
}

// waitChannel gives the sidecar up to channelReadyWait to register once
// the TUI is up: Claude Code connects MCP servers in the background, and a
// prompt sent before then reaches a model that is not offered the avenor
// tools. Without it the session goes on, terminal only.
func (s *channelSession) waitChannel(ctx context.Context) {
	deadline := time.Now().Add(channelReadyWait)
	for !s.ready.Load() && time.Now().Before(deadline) && !s.term.done() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	if !s.ready.Load() {
		s.log.Warn("the channel sidecar did not register; prompts are only pasted", "server", s.serverName, "waited", channelReadyWait)
	}
}

// pump turns broker events into session events until stop; it also
// removes the .mcp.json entry as soon as the terminal dies.
func (s *channelSession) pump() {
	defer close(s.pumpDone)
	tick := time.NewTicker(deathPoll)
	defer tick.Stop()
	for {
		select {
		case <-s.stopPump:
			return
		case <-tick.C:
			if s.term.done() {
				s.cleanup.removeEntry()
			}
		case ev := <-s.broker.Events():
			s.handle(ev)
		}
	}
}

func (s *channelSession) handle(ev channel.Event) {
	switch ev.Kind {
	case channel.EventRegistered:
		s.ready.Store(true)
		if s.opened.Load() {
			s.announce()
		}
	case channel.EventReport:
		r := ev.Report
		s.host.Emit(runtime.NewEvent(EventReport, map[string]any{"session_id": s.id, "state": r.State, "payload": rawOrNil(r.Payload), "source": "channel"}))
		if text := payloadText(r.Payload); text != "" {
			s.host.Emit(runtime.MessageChunk(s.id, text+"\n"))
		}
		s.host.Emit(runtime.NewEvent(EventStatus, map[string]any{"session_id": s.id, "phase": reportPhase(r.State), "label": payloadText(r.Payload), "source": "channel"}))
	case channel.EventReply:
		r := ev.Reply
		s.host.Emit(runtime.NewEvent(EventReply, map[string]any{"session_id": s.id, "to": r.To, "payload": rawOrNil(r.Payload), "source": "channel"}))
	case channel.EventFinish:
		f := *ev.Finish
		files := f.FilesChanged
		if files == nil {
			files = []string{}
		}
		s.host.Emit(runtime.NewEvent(EventFinish, map[string]any{"session_id": s.id, "status": f.Status, "summary": f.Summary,
			"files_changed": files, "payload": rawOrNil(f.Details), "source": "channel"}))
		if s.inTurn.Load() {
			select {
			case s.finishes <- f:
			default: // the turn already has its finish; later ones are events only
			}
		}
	case channel.EventPermission:
		s.relays.Add(1)
		p := *ev.Permission
		s.permWG.Add(1)
		go func() {
			defer s.permWG.Done()
			s.relayPermission(p)
		}()
	}
}

// announce emits agent.channel_ready once. A sidecar that registers while
// Open runs is announced by the first Prompt, so the event never precedes
// the host's session.start.
func (s *channelSession) announce() {
	if s.ready.Load() && s.announced.CompareAndSwap(false, true) {
		s.host.Emit(runtime.NewEvent(EventChannelReady, map[string]any{"session_id": s.id, "run_id": s.runID, "server_name": s.serverName, "source": "channel"}))
	}
}

// relayPermission asks the host about Claude's channel permission prompt
// and sends the answer back as a permission_decision control. Claude Code
// also shows the dialog on screen; whichever answer comes first wins.
func (s *channelSession) relayPermission(p channel.PermissionRequest) {
	d, err := s.host.AskPermission(s.permCtx, runtime.PermissionRequest{
		ID: "channel_" + p.RequestID, Tool: p.ToolName, Question: p.Description,
		Options: []runtime.PermissionOption{
			{ID: "allow", Kind: runtime.KindAllowOnce, Name: "Allow"},
			{ID: "deny", Kind: runtime.KindReject, Name: "Deny"},
		},
		Fields: map[string]any{"session_id": s.id, "source": "channel", "request_id": p.RequestID,
			"input_preview": p.InputPreview, "experimental": true},
	})
	// A "cancelled" answer cancels the turn, as on every backend (the
	// request is denied first, so Claude is not left waiting).
	cancelTurn := err == nil && d.Outcome == runtime.OutcomeCancelled
	if err != nil || d.Outcome == runtime.OutcomeCancelled {
		// Nobody decided (the session is ending): deny rather than leave
		// Claude waiting.
		d = runtime.PermissionDecision{Outcome: runtime.OutcomeSelected, Kind: runtime.KindReject}
	}
	if _, err := s.broker.Decide(s.runID, p.RequestID, d.Allowed()); err != nil {
		s.log.Warn("could not send the permission decision to the channel", "request_id", p.RequestID, "error", err)
	}
	if t := s.Runner.Current(); cancelTurn && t != nil {
		s.Runner.CancelTurn(t)
	}
}

// reportPhase maps an avenor_report state to an agent.status phase.
func reportPhase(state string) string {
	switch state {
	case "thinking":
		return "thinking"
	case "blocked", "permission_requested":
		return "waiting"
	default: // started, working, checkpoint, error
		return "working"
	}
}

// finishStop maps an avenor_finish status to a stop reason: blocked is the
// contract's blocked (exit 5), failed an error (exit 1).
func finishStop(status string) runtime.StopReason {
	switch status {
	case "failed":
		return runtime.StopError
	case "blocked":
		return runtime.StopBlocked
	default:
		return runtime.StopEndTurn
	}
}

func rawOrNil(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return raw
}

// payloadText is a payload that is a JSON string, or its "message" or
// "text" field.
func payloadText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Message string `json:"message"`
		Text    string `json:"text"`
	}
	if json.Unmarshal(raw, &o) == nil {
		if o.Message != "" {
			return o.Message
		}
		return o.Text
	}
	return ""
}

// stop ends the pump and the permission asks, then undoes Open.
func (s *channelSession) stop() {
	s.stopOnce.Do(func() {
		s.permCancel()
		s.cleanup.run() // kills the terminal and closes the broker: nothing new arrives
		close(s.stopPump)
		<-s.pumpDone
		s.permWG.Wait()
	})
}

// Close ends the session: the terminal, the channel, the .mcp.json entry.
func (s *channelSession) Close(ctx context.Context) error {
	err := s.ptySession.Close(ctx)
	s.stop()
	return err
}

// SidecarCommand is the plugin's argument that runs it as the channel's MCP
// sidecar (the .mcp.json entry Claude Code starts); the plugin's main
// dispatches on it.
const SidecarCommand = "claude-channel"
