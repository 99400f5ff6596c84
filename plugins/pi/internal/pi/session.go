package pi

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/procsession"
	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/turn"
	"github.com/hashicorp/go-hclog"
)

// Bounds on waiting for pi. Each one turns a silent pi into an error
// instead of a hang.
const (
	// stateTimeout bounds the get_state that follows the spawn (pi loads
	// its extensions and models first).
	stateTimeout = 60 * time.Second
	// abortWait is how long a cancelled turn waits for pi's agent_end
	// before it ends anyway (the host allows 5 s).
	abortWait = 3 * time.Second
	// stopGrace is the grace of each step of stopping pi.
	stopGrace = 2 * time.Second
	// maxInputBytes bounds the raw tool input copied into a permission
	// request (docs/events.md#permissionrequest).
	maxInputBytes = 4 << 10
)

func (backend) Open(ctx context.Context, req runtime.OpenRequest, host runtime.Host) (runtime.Session, error) {
	if host == nil {
		return nil, runtime.Errorf(runtime.FaultPlugin, "%s: Open without a host", Name)
	}
	l, err := plan(req)
	if err != nil {
		if l.cleanup != nil {
			l.cleanup()
		}
		return nil, err
	}
	opened := false
	defer func() {
		if !opened && l.cleanup != nil {
			l.cleanup()
		}
	}()
	if req.ResumeSessionID != "" {
		if req.StateDir == "" {
			return nil, runtime.Errorf(runtime.FaultUser, "%s: cannot resume %q: pi keeps sessions only under the plugin's state directory, and none was given", Name, req.ResumeSessionID)
		}
		path, err := findSession(sessionDir(req.StateDir), req.ResumeSessionID)
		if err != nil {
			return nil, err
		}
		l.args = append(l.args, "--session", path)
	}
	version, err := versionOf(ctx, l)
	if err != nil {
		return nil, err
	}
	sk := procsession.New(procsession.Config{Backend: Name, Host: host})
	log := sk.Log.Named(Name)
	proc, err := procsession.Start(Name, agentproc.Spec{
		Path: l.binary, Args: l.args, Dir: l.dir, Env: l.env,
		InstallHint: installHint, Logger: log.Named("stderr"),
	})
	if err != nil {
		return nil, err
	}
	s := &session{
		host: host, log: log, proc: proc, binary: l.binary, version: version, gate: l.gate, cleanup: l.cleanup,
		pending: map[string]chan frame{},
		dialogs: map[string]*dialog{},
		Runner:  sk.Runner,
	}
	go s.read()

	sctx, cancel := context.WithTimeout(ctx, stateTimeout)
	defer cancel()
	resp, err := s.call(sctx, map[string]any{"type": "get_state"})
	if err == nil && !resp.Success {
		err = fmt.Errorf("get_state failed: %s", resp.Error)
	}
	if err != nil {
		s.stop()
		return nil, runtime.Errorf(runtime.FaultRuntime, "%s: pi did not start: %v%s", Name, err, s.stderr())
	}
	var st struct {
		SessionID string `json:"sessionId"`
		State     struct {
			SessionID string `json:"sessionId"`
		} `json:"state"`
	}
	_ = json.Unmarshal(resp.Data, &st)
	s.id = st.SessionID
	if s.id == "" {
		s.id = st.State.SessionID
	}
	if s.id == "" {
		s.id = "pi-" + strconv.Itoa(proc.PID())
	}
	if req.ResumeSessionID != "" && s.id != req.ResumeSessionID {
		log.Warn("pi resumed a session under another id", "asked", req.ResumeSessionID, "got", s.id)
	}
	opened = true // the session removes the launch files when it stops
	return s, nil
}

// frame is one line of pi's stdout, decoded as far as routing needs.
type frame struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Command string          `json:"command"`
	Success bool            `json:"success"`
	Error   string          `json:"error"`
	Data    json.RawMessage `json:"data"`
	raw     json.RawMessage
}

// dialog is an extension_ui_request waiting for its answer; it is answered
// exactly once.
type dialog struct {
	once sync.Once
	id   string
	meth string
}

// turnState is the turn in flight.
type turnState struct {
	rt       *turn.Turn    // the runner's: its context ends with the turn; permission asks use it
	done     chan struct{} // closed at agent_end
	doneOnce sync.Once

	mu        sync.Mutex // guards the fields below: the reader writes them
	usage     runtime.Usage
	hasUsage  bool
	stop      string // last assistant stopReason
	errMsg    string
	finalText string
	tools     map[string]toolCall // in flight, by toolCallId
	lastTool  string
}

type toolCall struct {
	name string
	args json.RawMessage
}

type session struct {
	cleanup func() // removes the launch context's files; nil when none
	host    runtime.Host
	log     hclog.Logger
	proc    *agentproc.Process
	binary  string
	version string
	gate    bool
	id      string

	writeMu sync.Mutex
	seq     atomic.Int64
	unknown atomic.Int64

	*turn.Runner // the turn in flight, its cancel, Close

	mu       sync.Mutex
	pending  map[string]chan frame
	dialogs  map[string]*dialog
	turn     *turnState
	stopOnce sync.Once
}

func (s *session) ID() string { return s.id }

func (s *session) Process() runtime.ProcessInfo {
	return runtime.ProcessInfo{PID: s.proc.PID(), PGID: s.proc.PGID(), Binary: s.binary, Version: s.version}
}

// StartFields adds the runtime's name and version to session.start.
func (s *session) StartFields() map[string]any {
	return map[string]any{"runtime": "pi", "runtime_version": s.version, "permission_gate": s.gate}
}

func (s *session) stderr() string {
	select {
	case <-s.proc.Done():
	case <-time.After(500 * time.Millisecond):
	}
	if t := agentproc.LastLines(strings.TrimSpace(s.proc.StderrTail()), 0, agentproc.ExitReportBytes); t != "" {
		return "; pi's stderr ends with: " + t
	}
	return ""
}

// send writes one command as a single LF-terminated JSON line. Go's JSON
// encoder escapes U+2028/U+2029, so the line holds no other separator.
func (s *session) send(cmd map[string]any) error {
	b, err := json.Marshal(cmd)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	_, err = s.proc.Stdin().Write(b)
	return err
}

func (s *session) nextID() string {
	return fmt.Sprintf("avenor-%d-%d", time.Now().UnixNano(), s.seq.Add(1))
}

// expect registers for the response to command id, which arrives on ch;
// forget, deferred by the caller, unregisters it.
func (s *session) expect(id string) (ch chan frame, forget func()) {
	ch = make(chan frame, 1)
	s.mu.Lock()
	s.pending[id] = ch
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}
}

// call sends a command with an id and waits for its response.
func (s *session) call(ctx context.Context, cmd map[string]any) (frame, error) {
	id := s.nextID()
	cmd["id"] = id
	ch, forget := s.expect(id)
	defer forget()
	if err := s.send(cmd); err != nil {
		return frame{}, fmt.Errorf("writing %s to pi: %w", cmd["type"], err)
	}
	select {
	case f := <-ch:
		return f, nil
	case <-s.proc.Done():
		// A response may have been read just before the exit.
		select {
		case f := <-ch:
			return f, nil
		default:
		}
		return frame{}, fmt.Errorf("pi exited (%v) before answering %s", s.proc.ExitErr(), cmd["type"])
	case <-ctx.Done():
		return frame{}, fmt.Errorf("no answer to %s: %w", cmd["type"], ctx.Err())
	}
}

// read routes every line of pi's stdout until it ends.
func (s *session) read() {
	for line := range s.proc.Lines() {
		if line.Err != nil {
			s.log.Warn("pi output line dropped", "error", line.Err)
			continue
		}
		if len(line.Data) == 0 {
			continue
		}
		var f frame
		if err := json.Unmarshal(line.Data, &f); err != nil {
			s.countUnknown("invalid_json", map[string]any{"line": runtime.Truncate(string(line.Data), 512)})
			continue
		}
		f.raw = line.Data
		if f.Type == "response" {
			s.mu.Lock()
			ch := s.pending[f.ID]
			s.mu.Unlock()
			if ch != nil {
				ch <- f
			}
			continue
		}
		s.handle(f)
	}
}

// countUnknown counts a frame the plugin does not recognise and passes it
// on as avenor.native.
func (s *session) countUnknown(typ string, payload any) {
	n := s.unknown.Add(1)
	s.log.Debug("unknown pi frame", "type", typ, "unknown_frames", n)
	s.emit(runtime.NewEvent(runtime.EventNative, map[string]any{"native_type": typ, "payload": payload, "session_id": s.id}))
}

// emit sends an event while a turn runs; outside a turn nothing is sent,
// so no event lands after the session.end of its turn.
func (s *session) emit(ev runtime.Event) {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t == nil {
		s.log.Debug("pi event outside a turn dropped", "type", ev.Type)
		return
	}
	s.host.Emit(ev)
}

func (s *session) currentTurn() *turnState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turn
}

func (s *session) Prompt(ctx context.Context, in runtime.Turn) (runtime.TurnResult, error) {
	rt, err := s.Runner.Begin(ctx)
	if err != nil {
		return runtime.TurnResult{}, err
	}
	defer s.Runner.End(rt)
	t := &turnState{rt: rt, done: make(chan struct{}), tools: map[string]toolCall{}}
	defer turn.Publish(&s.mu, &s.turn, t)()
	if rt.IsCancelled() { // cancelled while starting: pi was asked nothing
		return s.result(t, runtime.StopCancelled), nil
	}
	select {
	case <-s.proc.Done():
		return runtime.TurnResult{}, s.exited("before the turn")
	default:
	}

	id := s.nextID()
	ch, forget := s.expect(id)
	defer forget()
	if err := s.send(map[string]any{"type": "prompt", "id": id, "message": in.Text}); err != nil {
		return runtime.TurnResult{}, s.exited("while sending the prompt")
	}
	for {
		select {
		case f := <-ch:
			if !f.Success {
				r := s.result(t, runtime.StopError)
				r.Extra["error_message"] = "pi refused the prompt: " + f.Error
				return r, nil
			}
		case <-t.done:
			return s.result(t, t.stopReason()), nil
		case <-rt.Cancelled(): // Cancel, Close or ctx ending
			return s.abortTurn(t), nil
		case <-s.proc.Done():
			// The reader may still be delivering agent_end.
			select {
			case <-t.done:
				return s.result(t, t.stopReason()), nil
			case <-time.After(agentproc.OutputDrainIdle):
			}
			return runtime.TurnResult{}, s.exited("during the turn")
		}
	}
}

func (s *session) exited(when string) error {
	return runtime.Errorf(runtime.FaultRuntime, "%s: pi exited %s (%v)%s", Name, when, s.proc.ExitErr(), s.stderr())
}

// abortTurn stops the turn: every open dialog is answered cancelled first
// (an abort with a dialog open can hang pi, runtime-protocols §4.6), then
// abort is sent and pi's agent_end awaited, within abortWait.
func (s *session) abortTurn(t *turnState) runtime.TurnResult {
	s.cancelDialogs()
	if err := s.send(map[string]any{"type": "abort", "id": s.nextID()}); err != nil {
		s.log.Debug("abort not sent", "error", err)
	}
	select {
	case <-t.done:
	case <-s.proc.Done():
	case <-time.After(abortWait):
		s.log.Warn("pi did not end the turn after abort", "waited", abortWait)
	}
	return s.result(t, runtime.StopCancelled)
}

func (s *session) cancelDialogs() {
	s.mu.Lock()
	open := make([]*dialog, 0, len(s.dialogs))
	for _, d := range s.dialogs {
		open = append(open, d)
	}
	s.mu.Unlock()
	for _, d := range open {
		s.answer(d, map[string]any{"cancelled": true})
	}
}

// answer sends d's extension_ui_response once.
func (s *session) answer(d *dialog, fields map[string]any) {
	d.once.Do(func() {
		s.mu.Lock()
		delete(s.dialogs, d.id)
		s.mu.Unlock()
		msg := map[string]any{"type": "extension_ui_response", "id": d.id}
		for k, v := range fields {
			msg[k] = v
		}
		if err := s.send(msg); err != nil {
			s.log.Debug("extension_ui_response not sent", "error", err)
		}
	})
}

func (s *session) result(t *turnState, stop runtime.StopReason) runtime.TurnResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := runtime.TurnResult{StopReason: stop, Extra: map[string]any{
		"unknown_frames":  s.unknown.Load(),
		"runtime_version": s.version,
	}}
	if t.hasUsage {
		u := t.usage
		r.Usage = &u
	}
	if t.finalText != "" && stop != runtime.StopCancelled {
		r.FinalOutput, r.HasFinalOutput = t.finalText, true
	}
	if stop == runtime.StopError && t.errMsg != "" {
		r.Extra["error_message"] = t.errMsg
	}
	return r
}

// mapStop maps pi's last stopReason (runtime-protocols §7.1).
func mapStop(reason string) runtime.StopReason {
	switch reason {
	case "stop", "", "end_turn", "end_of_turn":
		return runtime.StopEndTurn
	case "length":
		return runtime.StopMaxTokens
	case "aborted":
		return runtime.StopCancelled
	case "toolUse":
		return runtime.StopEndTurn
	default:
		return runtime.StopError
	}
}

// Close aborts the turn in flight and stops pi.
func (s *session) Close(context.Context) error {
	s.Runner.Close(s.stop)
	return nil
}

// stop ends pi and its process group (stdin EOF first: pi exits on it).
func (s *session) stop() {
	s.stopOnce.Do(func() {
		if s.cleanup != nil {
			defer s.cleanup()
		}
		s.cancelDialogs()
		procsession.Stop{Proc: s.proc, Grace: stopGrace, Log: s.log, What: "pi stopped", Then: func() {
			_ = agentproc.KillGroup(s.proc.PGID())
			s.log.Debug("pi session closed", "session_id", s.id, "unknown_frames", s.unknown.Load(), "runtime_version", s.version)
		}}.Run()
	})
}

func (t *turnState) stopReason() runtime.StopReason {
	t.mu.Lock()
	defer t.mu.Unlock()
	return mapStop(t.stop)
}
