package claudecode

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/procsession"
	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/turn"
)

// PTYName is the interactive backend's name.
const PTYName = "claude"

// TerminalEnv chooses the launcher: unset or "pty" is the built-in
// pseudo-terminal, "tmux" a private tmux server (docs/backends.md#claude-plugin-claude).
const TerminalEnv = "AVENOR_CLAUDE_TERMINAL"

// EventPromptSubmitted says the prompt was typed into the TUI (docs/events.md#backend-events).
const EventPromptSubmitted = "agent.prompt_submitted"

// Timings of the interactive backend.
const (
	ptyReadyTimeout = 60 * time.Second
	ptyPoll         = 150 * time.Millisecond
	ptyReEnter      = 750 * time.Millisecond // docs/backends.md#claude-plugin-claude's re-Enter rule
	ptyCancelWait   = 3 * time.Second
	ptyIdleSettle   = time.Second // idle this long after an answer ends a turn without turn_duration
	ptyKillGrace    = time.Second
	ptyRetype       = 600 * time.Millisecond // an answer typed while the dialog ignored keys
)

// NewPTYBackend is `claude`: Claude Code's interactive TUI in a
// pseudo-terminal, progress from its JSONL transcript, idle/busy and
// permission dialogs from the rendered screen (docs/backends.md#claude-plugin-claude).
func NewPTYBackend() runtime.Backend { return &ptyBackend{} }

type ptyBackend struct{}

func (b *ptyBackend) Info() runtime.BackendInfo {
	return runtime.BackendInfo{
		Name: PTYName,
		Description: "Claude Code's interactive TUI in a 220×50 pseudo-terminal (or a private tmux server with " + TerminalEnv + "=tmux): " +
			"`claude --session-id <uuid> --permission-mode default`; events from the JSONL transcript, permission dialogs read from the screen (experimental)",
		// Resume: follow-ups continue the session in its live terminal, so only
		// while this plugin process holds it (resume scope in_process):
		// `avenor stable` keeps a parked claude runtime's plugin for
		// that and says "session lost" once it is gone.
		Capabilities: runtime.Supports(
			runtime.CapNewSessions, runtime.CapResume, runtime.CapPrompt, runtime.CapCancel,
			runtime.CapEventStreaming, runtime.CapModelSelection, runtime.CapSubprocessDiscovery, runtime.CapModelListing,
		).
			With(runtime.CapPermissionRelay, runtime.Experimental),
		ResumeScope:    runtime.ResumeInProcess,
		ThinkingLevels: thinkingLevels,
		EventTypes: []runtime.EventType{runtime.EventMessageChunk, runtime.EventThoughtChunk, runtime.EventToolCall,
			runtime.EventToolCallUpdate, runtime.EventWarning, EventPromptSubmitted},
	}
}

// Check is claude-stream's (Claude Code is there), plus tmux when
// AVENOR_CLAUDE_TERMINAL=tmux (docs/backends.md#claude-plugin-claude: required only then).
func (b *ptyBackend) Check(ctx context.Context, req runtime.CheckRequest) runtime.Readiness {
	return checkTUI(ctx, req, PTYName, launcherPTY)
}

// checkTUI is Check of the terminal backends: claude-stream's check of the
// CLI, in backend's name, plus the launcher's (tmux must be on PATH when
// chosen; def is the backend's default launcher).
func checkTUI(ctx context.Context, req runtime.CheckRequest, backend string, def launcher) runtime.Readiness {
	r := (&streamBackend{}).Check(ctx, req)
	r.Message = strings.Replace(r.Message, StreamName+":", backend+":", 1)
	l, err := terminalLauncher(agentproc.Environ(req.Env, nil), backend, def)
	switch {
	case err != nil:
		r.Ready, r.Message = false, err.Error()
	case l == launcherTmux:
		if _, err := exec.LookPath("tmux"); err != nil {
			fix := "set " + TerminalEnv + "=pty"
			if def == launcherPTY {
				fix = "unset " + TerminalEnv
			}
			msg := fmt.Sprintf("%s: %v; or %s to use the built-in pseudo-terminal", backend, errNoTmux, fix)
			if !r.Ready { // both are missing: say both
				msg = r.Message + "; and " + msg
			}
			r.Ready, r.Message = false, msg
		} else if r.Ready {
			r.Message += "; terminal: tmux"
		}
	}
	return r
}

func (b *ptyBackend) Open(ctx context.Context, req runtime.OpenRequest, host runtime.Host) (runtime.Session, error) {
	if strings.TrimSpace(req.Dir) == "" {
		return nil, runtime.Errorf(runtime.FaultUser, "%s: no working directory given", PTYName)
	}
	if req.ResumeSessionID != "" {
		// A live session is continued by the host without a new Open (it
		// keeps the plugin), so a resume by id always names a session this
		// process does not hold.
		return nil, runtime.Errorf(runtime.FaultUser, "%s: session %q: %v: the interactive backend continues a session only in the plugin process whose terminal holds it (resume scope in_process), and that process is gone or closed it; start a new session, or use claude-stream, which resumes from Claude Code's transcript on disk",
			PTYName, req.ResumeSessionID, runtime.ErrSessionNotFound)
	}
	ts, err := prepareTerminal(ctx, PTYName, launcherPTY, req, host)
	if err != nil {
		return nil, err
	}
	id := newUUID()
	args := append([]string{"--session-id", id, "--permission-mode", "default"}, optionalFlags(req)...)
	s, err := startTUI(PTYName, ts.launch, "avenor-"+id[:8], id, ts.bin, args, ts.env, req.Dir)
	if err != nil {
		return nil, err
	}
	s.version, s.host, s.log = ts.version, host, ts.log
	procsession.Record(host, s.Process())
	if err := s.waitReady(ctx); err != nil {
		s.term.kill(ptyKillGrace)
		return nil, err
	}
	return s, nil
}

// terminalStart is what both terminal backends work out from an Open
// request before they start Claude Code's TUI.
type terminalStart struct {
	env     []string // the CLI's environment, TERM set
	launch  launcher
	bin     string
	version string // what `claude --version` says
	log     hclog.Logger
}

// prepareTerminal refuses a server URL, which neither terminal backend
// takes, picks the terminal (def unless TerminalEnv says otherwise) and
// makes sure the CLI is Claude Code.
func prepareTerminal(ctx context.Context, backend string, def launcher, req runtime.OpenRequest, host runtime.Host) (terminalStart, error) {
	if req.ServerURL != "" {
		return terminalStart{}, runtime.Errorf(runtime.FaultUser, "%s does not use a server URL (--server-url); set ANTHROPIC_BASE_URL in [backends.%s].env", backend, backend)
	}
	ts := terminalStart{env: agentproc.Environ(req.Env, map[string]string{"TERM": "xterm-256color"}), bin: binary(req.Options, req.Env)}
	var err error
	if ts.launch, err = terminalLauncher(ts.env, backend, def); err != nil {
		return terminalStart{}, err
	}
	if _, ts.version, err = claudeVersion(ctx, ts.bin, ts.env); err != nil {
		return terminalStart{}, err
	}
	if ts.log = host.Logger(); ts.log == nil {
		ts.log = hclog.NewNullLogger()
	}
	return ts, nil
}

// optionalFlags are the flags both terminal backends pass when asked
// (docs/backends.md#claude-plugin-claude, docs/backends.md#claude-channel-plugin-claude-experimental).
func optionalFlags(req runtime.OpenRequest) []string {
	var args []string
	if req.Agent != "" {
		args = append(args, "--agent", req.Agent)
	}
	if req.Model != "" {
		args = append(args, "--model", req.Model)
	}
	if req.Thinking != "" {
		args = append(args, "--effort", req.Thinking)
	}
	return args
}

// startTUI starts Claude Code's TUI in a terminal named name and wraps it in
// session id's session, whose transcript is followed; the caller sets its
// version, host and log. Errors name the backend and the fix.
func startTUI(backend string, launch launcher, name, id, bin string, args, env []string, dir string) (*ptySession, error) {
	t, err := startTerminal(launch, name, bin, args, env, dir)
	if err != nil {
		var nf *agentproc.NotFoundError
		switch {
		case errors.As(err, &nf):
			return nil, runtime.Errorf(runtime.FaultRuntime, "%s: the runtime CLI %q was not found; %s", backend, bin, installHint)
		case errors.Is(err, errNoTmux):
			return nil, runtime.Errorf(runtime.FaultUser, "%s: %v; or set %s=pty to use the built-in pseudo-terminal", backend, err, TerminalEnv)
		}
		return nil, runtime.Errorf(runtime.FaultRuntime, "%s: %v", backend, err)
	}
	return &ptySession{id: id, bin: bin, term: t, launcher: launch, kinds: map[string]string{}, Runner: turn.New(turn.Config{Backend: backend}),
		tail: &transcriptTail{configDir: claudeConfigDir(env), sessionID: id}}, nil
}

// terminalLauncher reads AVENOR_CLAUDE_TERMINAL from the session's
// environment: unset means def (claude: the built-in pseudo-terminal,
// docs/backends.md#claude-plugin-claude; claude-channel: tmux, docs/backends.md#claude-channel-plugin-claude-experimental), "pty" or "tmux" choose.
func terminalLauncher(env []string, backend string, def launcher) (launcher, error) {
	switch v := strings.TrimSpace(lookupEnv(env, TerminalEnv)); v {
	case "":
		return def, nil
	case string(launcherPTY):
		return launcherPTY, nil
	case string(launcherTmux):
		return launcherTmux, nil
	default:
		return "", runtime.Errorf(runtime.FaultUser, "%s: %s=%q is not a terminal launcher; set it to %q or %q, or unset it (%s)", backend, TerminalEnv, v, launcherTmux, launcherPTY, def)
	}
}

// ptySession is one TUI; one turn at a time.
type ptySession struct {
	id, bin, version string
	host             runtime.Host
	log              hclog.Logger
	term             terminal
	launcher         launcher // how term was started: pty or tmux
	tail             *transcriptTail
	kinds            map[string]string // tool_use id → kind

	*turn.Runner // the turn in flight, its cancel, the terminal's death, close
}

func (s *ptySession) ID() string { return s.id }

func (s *ptySession) Process() runtime.ProcessInfo {
	return runtime.ProcessInfo{PID: s.term.pid(), PGID: s.term.pid(), Binary: s.bin, Version: s.version}
}

func (s *ptySession) StartFields() map[string]any {
	return map[string]any{"runtime": "claude-code", "runtime_version": s.version, "dangerously_load": false, "terminal": string(s.launcher)}
}

// waitReady waits for the input box.
func (s *ptySession) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(ptyReadyTimeout)
	for time.Now().Before(deadline) {
		scr := s.term.screen()
		st := readScreen(scr)
		switch {
		case st.idle():
			return nil
		case strings.Contains(scr, "Do you trust the files in this folder?"), strings.Contains(scr, "Choose the text style"),
			strings.Contains(scr, "Do you want to use this API key?"):
			return runtime.Errorf(runtime.FaultUser, "%s: Claude Code shows a first-run dialog; run `claude` once in %s (or pre-seed ~/.claude.json: hasCompletedOnboarding, the project's hasTrustDialogAccepted, customApiKeyResponses)\nscreen:\n%s",
				PTYName, "the project directory", lastLines(scr, 12))
		case s.term.done():
			return runtime.Errorf(runtime.FaultRuntime, "%s: %s exited before its input box appeared (%v)\nscreen:\n%s", PTYName, s.bin, s.term.exitErr(), lastLines(scr, 12))
		}
		select {
		case <-ctx.Done():
			return runtime.Errorf(runtime.FaultRuntime, "%s: interrupted while waiting for the TUI: %v", PTYName, ctx.Err())
		case <-time.After(ptyPoll):
		}
	}
	return runtime.Errorf(runtime.FaultRuntime, "%s: Claude Code's input box did not appear within %s\nscreen:\n%s", PTYName, ptyReadyTimeout, lastLines(s.term.screen(), 12))
}

// beginTurn starts a turn on a live terminal; endTurn must follow. The
// turn's Cancelled is closed by Cancel (also one that came while the turn
// was starting), Close, or ctx ending.
func (s *ptySession) beginTurn(ctx context.Context) (*turn.Turn, error) {
	return s.Runner.Begin(ctx)
}

func (s *ptySession) endTurn(t *turn.Turn) { s.Runner.End(t) }

// typePrompt pastes text as one bracketed paste and presses Enter, saying
// so with agent.prompt_submitted (docs/events.md#agentprompt_submitted: delivery is the launcher)
// just before the Enter: the runtime may answer the prompt at once, and
// what it answers must not come before the prompt in the log. The pause
// lets the TUI take the paste before the Enter that submits it.
func (s *ptySession) typePrompt(backend, text string) error {
	if err := s.term.paste(text); err != nil {
		return runtime.Errorf(runtime.FaultRuntime, "%s: typing the prompt: %v", backend, err)
	}
	time.Sleep(100 * time.Millisecond)
	s.host.Emit(runtime.NewEvent(EventPromptSubmitted, map[string]any{"session_id": s.id, "delivery": string(s.launcher),
		"prompt_length": len([]rune(text)), "source": string(s.launcher)}))
	_ = s.term.send("\r")
	return nil
}

// followTranscript emits the events of the transcript's new complete
// lines. text is the latest assistant text among them ("" if none), ended
// whether the turn ended there (the lines after that are the next turn's).
func (s *ptySession) followTranscript() (text string, ended bool) {
	for _, line := range s.tail.next() {
		evs, end, t := transcriptEvents(s.id, line, s.kinds)
		for _, ev := range evs {
			s.host.Emit(ev)
		}
		if t != "" {
			text = t
		}
		if end {
			return text, true
		}
	}
	return text, false
}

// reEnter is docs/backends.md#claude-plugin-claude's re-Enter rule, checked once ptyReEnter after
// the paste: if the TUI is idle and its input box still shows the start of
// the prompt (the first 96 bytes), the Enter was lost; press it again.
func (s *ptySession) reEnter(prompt string, st screenState) {
	prefix := prompt
	if len(prefix) > 96 {
		prefix = prefix[:96]
	}
	if st.idle() && st.inputLine != "" && strings.HasPrefix(prefix, st.inputLine[:min(len(st.inputLine), len(prefix))]) {
		s.log.Debug("the prompt is still in the input box; pressing Enter again")
		_ = s.term.send("\r")
	}
}

// Prompt pastes the prompt and presses Enter, then follows the transcript
// until the turn ends: system/turn_duration, or the screen idle for a
// second after an answer.
func (s *ptySession) Prompt(ctx context.Context, in runtime.Turn) (runtime.TurnResult, error) {
	t, err := s.beginTurn(ctx)
	if err != nil {
		return runtime.TurnResult{StopReason: runtime.StopError}, err
	}
	defer s.endTurn(t)
	cancel := t.Cancelled()
	done := func(stop runtime.StopReason, final string) runtime.TurnResult {
		r := runtime.TurnResult{StopReason: stop, Extra: map[string]any{"status": "done", "runtime_version": s.version}}
		if final != "" {
			r.FinalOutput, r.HasFinalOutput = final, true
		}
		return r
	}
	if t.IsCancelled() { // cancelled while starting: nothing was typed
		return done(runtime.StopCancelled, ""), nil
	}

	s.tail.skipToEnd()
	if err := s.typePrompt(PTYName, in.Text); err != nil {
		return done(runtime.StopError, ""), err
	}
	submitted := time.Now()
	reEntered := false

	var final string
	answered := false
	var idleSince time.Time
	var dlg dialog
	for {
		text, ended := s.followTranscript()
		if text != "" {
			final, answered = text, true
		}
		if ended {
			return done(runtime.StopEndTurn, final), nil
		}
		st := readScreen(s.term.screen())
		if !reEntered && time.Since(submitted) >= ptyReEnter {
			reEntered = true
			s.reEnter(in.Text, st)
		}
		if stop := s.answerDialog(ctx, cancel, st, &dlg); stop != "" {
			return done(stop, ""), nil
		}
		if st.idle() && (answered || dlg.rejected) {
			if idleSince.IsZero() {
				idleSince = time.Now()
			} else if time.Since(idleSince) >= ptyIdleSettle {
				return done(runtime.StopEndTurn, final), nil
			}
		} else {
			idleSince = time.Time{}
		}
		if s.term.done() {
			s.markDead(fmt.Errorf("claude exited (%v)", s.term.exitErr()))
			return done(runtime.StopEndTurn, final), nil // docs/backends.md#claude-plugin-claude: terminal exit without cancel
		}
		select {
		case <-ctx.Done():
			return done(s.interrupt(), ""), nil
		case <-cancel:
			return done(s.interrupt(), ""), nil
		case <-time.After(ptyPoll):
		}
	}
}

// dialog is where a turn is with Claude's permission dialogs.
type dialog struct {
	asked      bool      // the dialog on screen was asked about
	answer     string    // keys that answer the open dialog
	answeredAt time.Time // when they were last typed
	rejected   bool      // Esc on a dialog stops the turn without another answer
}

// answerDialog asks about a permission dialog that appears on screen, once
// per dialog, and types its answer. Claude Code ignores keys for a moment
// after a dialog appears, so the answer is typed again every ptyRetype
// until the dialog is gone. A stop reason ends the turn.
func (s *ptySession) answerDialog(ctx context.Context, cancel <-chan struct{}, st screenState, d *dialog) (stop runtime.StopReason) {
	switch {
	case st.permission && !d.asked:
		d.asked = true
		stop, key := s.permission(ctx, cancel)
		if stop != "" {
			return stop
		}
		d.answer, d.answeredAt = key, time.Now()
		d.rejected = d.rejected || key == "\x1b"
		_ = s.term.send(d.answer)
	case st.permission && d.answer != "" && time.Since(d.answeredAt) >= ptyRetype:
		d.answeredAt = time.Now()
		_ = s.term.send(d.answer)
	case !st.permission:
		d.asked, d.answer = false, ""
	}
	return ""
}

// permission raises the dialog on screen as a request and returns the keys
// that answer it: the option's number to allow, Esc to reject; or the stop
// reason when the turn was cancelled instead.
func (s *ptySession) permission(ctx context.Context, cancel <-chan struct{}) (stop runtime.StopReason, keys string) {
	scr := s.term.screen()
	question, tool := "Do you want to proceed?", ""
	lines := strings.Split(scr, "\n")
	for i, l := range lines {
		if strings.Contains(l, "Do you want to proceed?") {
			var ctxLines []string
			for j := max(0, i-6); j < i; j++ {
				if t := strings.Trim(strings.TrimSpace(lines[j]), "─╌"); t != "" {
					ctxLines = append(ctxLines, t)
				}
			}
			if len(ctxLines) > 0 {
				tool = strings.TrimSuffix(ctxLines[0], " command")
				question = strings.Join(ctxLines, " · ") + " — Do you want to proceed?"
			}
			break
		}
	}
	opts := []runtime.PermissionOption{{ID: "1", Kind: runtime.KindAllowOnce, Name: "Yes"}}
	if strings.Contains(scr, "2. Yes, and") {
		opts = append(opts, runtime.PermissionOption{ID: "2", Kind: runtime.KindAllowAlways, Name: "Yes, and always allow"})
	}
	opts = append(opts, runtime.PermissionOption{ID: "reject", Kind: runtime.KindReject, Name: "No (Esc)"})
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	go func() {
		select {
		case <-cancel:
			pcancel()
		case <-pctx.Done():
		}
	}()
	d, err := s.host.AskPermission(pctx, runtime.PermissionRequest{
		ID: fmt.Sprintf("pty_%d", time.Now().UnixNano()), Options: opts, Tool: tool, Question: question,
		Fields: map[string]any{"session_id": s.id, "source": string(s.launcher), "experimental": true},
	})
	switch {
	case err != nil || d.Outcome == runtime.OutcomeCancelled:
		return s.interrupt(), ""
	case d.Allowed():
		return "", d.OptionID
	}
	return "", "\x1b"
}

// interrupt presses Esc twice and waits up to 3 s for the TUI to go idle:
// cancelled; else the terminal is killed: cancelled_forced.
func (s *ptySession) interrupt() runtime.StopReason {
	if s.term.done() {
		return runtime.StopCancelled
	}
	_ = s.term.send("\x1b")
	time.Sleep(100 * time.Millisecond)
	_ = s.term.send("\x1b")
	deadline := time.Now().Add(ptyCancelWait)
	for time.Now().Before(deadline) {
		time.Sleep(ptyPoll)
		if readScreen(s.term.screen()).idle() {
			return runtime.StopCancelled
		}
	}
	s.markDead(errors.New("killed after a cancel it did not honour"))
	s.term.kill(ptyKillGrace)
	return runtime.StopCancelledForced
}

func (s *ptySession) markDead(err error) { s.Runner.MarkDead(err) }

// Close cancels the turn in flight and kills the terminal.
func (s *ptySession) Close(ctx context.Context) error {
	s.Runner.Close(func() { s.term.kill(ptyKillGrace) })
	return nil
}
