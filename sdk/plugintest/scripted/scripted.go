package scripted

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/sessionstate"
	"github.com/avenor-go/avenor/sdk/turn"
)

// Version is the plugin's version, reported in Describe; builds may set it
// with -ldflags "-X github.com/avenor-go/avenor/sdk/plugintest/scripted.Version=...".
var Version = "0.1.0"

// Name is the backend name.
const Name = "scripted"

// EventError is the event of the `error` step.
const EventError = "avenor.error"

// PIDFileEnv names the variable that, when set, makes `child` write its
// child's pid to that file.
const PIDFileEnv = "SCRIPTED_CHILD_PIDFILE"

// ProseEnv names the variable (OpenRequest.Env first, then the plugin's
// own) that, when set, holds the script a prompt that is not a script runs
// instead of failing: the note a host writes to the agent (a restart's).
const ProseEnv = "SCRIPTED_PROSE_SCRIPT"

// maxScriptFile bounds an @file: script.
const maxScriptFile = 1 << 20

// ResumeScopeEnv names the variable that, set to "in_process" in the
// plugin's environment when New runs, makes the backend claim resume scope
// in_process, as a backend whose sessions live only in its process does
// (claude's TUI): it then resumes only sessions this process opened.
const ResumeScopeEnv = "SCRIPTED_RESUME_SCOPE"

// UsageEnv names the variable that, in the plugin's environment, narrows
// what the backend claims to report: "none" (no usage, no cost, as a
// backend that reports neither) or "tokens" (usage without cost). Unset:
// both, as the usage step reports them.
const UsageEnv = "SCRIPTED_USAGE"

// CompactEnv names the variable that, set to "fail" in the plugin's
// environment, makes every compaction fail with a runtime-fault error.
const CompactEnv = "SCRIPTED_COMPACT"

// New returns the scripted backend; its resume scope is cross_process
// unless ResumeScopeEnv says in_process.
func New() runtime.Backend {
	if os.Getenv(ResumeScopeEnv) == runtime.ResumeInProcess {
		return NewInProcess()
	}
	return backend{}
}

// NewInProcess returns the scripted backend with resume scope in_process.
func NewInProcess() runtime.Backend { return backend{live: &liveSessions{ids: map[string]bool{}}} }

type backend struct {
	// live, when set (resume scope in_process), is every session this
	// process opened: only those resume.
	live *liveSessions
}

type liveSessions struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (l *liveSessions) add(id string) {
	l.mu.Lock()
	l.ids[id] = true
	l.mu.Unlock()
}

func (l *liveSessions) has(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ids[id]
}

func (b backend) Info() runtime.BackendInfo {
	scope := runtime.ResumeCrossProcess
	if b.live != nil {
		scope = runtime.ResumeInProcess
	}
	caps := runtime.Supports(append([]runtime.Capability{
		runtime.CapNewSessions, runtime.CapResume, runtime.CapPrompt, runtime.CapCancel,
		runtime.CapEventStreaming, runtime.CapPermissionRelay, runtime.CapSubprocessDiscovery,
		runtime.CapPrewarm, runtime.CapSandbox, runtime.CapQuestions, runtime.CapImages, runtime.CapModelListing,
		runtime.CapUsageReporting, runtime.CapCostReporting, runtime.CapRateLimitReset, runtime.CapCompaction,
	}, runtime.LaunchCapabilityNames...)...)
	switch os.Getenv(UsageEnv) {
	case "none":
		delete(caps, runtime.CapUsageReporting)
		delete(caps, runtime.CapCostReporting)
	case "tokens":
		delete(caps, runtime.CapCostReporting)
	}
	return runtime.BackendInfo{
		Name:        Name,
		Description: "runs the script each prompt carries; a test double for hosts and benchmarks",
		// Every permission mode and launch-context field: the script's
		// permission steps are what the host's broker decides under a mode.
		Capabilities:   caps,
		ResumeScope:    scope,
		ThinkingLevels: []string{"low", "medium", "high"},
		EventTypes: []runtime.EventType{
			runtime.EventMessageChunk, runtime.EventThoughtChunk,
			runtime.EventToolCall, runtime.EventToolCallUpdate, EventError, runtime.EventUsageAccount,
		},
	}
}

func (backend) Check(_ context.Context, req runtime.CheckRequest) runtime.Readiness {
	if msg, ok := req.Options["not_ready"]; ok {
		return runtime.Readiness{Auth: "missing", Message: fmt.Sprint(msg)}
	}
	return runtime.Readiness{Ready: true, Message: "scripted needs no runtime binary"}
}

func (b backend) Open(_ context.Context, req runtime.OpenRequest, host runtime.Host) (runtime.Session, error) {
	if msg, ok := req.Options["fail_open"]; ok {
		return nil, runtime.Errorf(runtime.FaultRuntime, "%v", msg)
	}
	if req.Thinking != "" && !b.Info().AcceptsThinking(req.Thinking) {
		return nil, runtime.Errorf(runtime.FaultUser, "scripted accepts --thinking low, medium or high, not %q", req.Thinking)
	}
	st := sessionstate.Store[int]{Dir: req.StateDir, Name: Name + "-sessions"}
	id := req.ResumeSessionID
	var err error
	if id == "" {
		id = "scr_" + randomHex()
		err = st.Update(func(turns map[string]int) error { turns[id] = 0; return nil })
	} else if b.live != nil && !b.live.has(id) {
		return nil, runtime.Errorf(runtime.FaultUser, "scripted session %q: %v in this plugin process (resume scope in_process: a session continues only in the process that opened it)", id, runtime.ErrSessionNotFound)
	} else {
		err = st.Update(func(turns map[string]int) error {
			if _, ok := turns[id]; !ok {
				return runtime.Errorf(runtime.FaultUser, "scripted session %q not found (state dir %q): %v", id, req.StateDir, runtime.ErrSessionNotFound)
			}
			return nil
		})
	}
	if err != nil {
		return nil, err
	}
	if b.live != nil {
		b.live.add(id)
	}
	pidFile := req.Env[PIDFileEnv]
	if pidFile == "" {
		pidFile = os.Getenv(PIDFileEnv)
	}
	prose := req.Env[ProseEnv]
	if prose == "" {
		prose = os.Getenv(ProseEnv)
	}
	return &session{id: id, dir: req.Dir, env: req.Env, pidFile: pidFile, prose: prose, store: st, host: host,
		limits: sessionstate.Store[int]{Dir: req.StateDir, Name: Name + "-ratelimits"}, sandbox: req.Sandbox,
		questions: req.Questions,
		Runner:    turn.New(turn.Config{Backend: Name})}, nil
}

type session struct {
	// sandbox is the boundary the script's runtime commands (lines) run
	// inside; shell, which runs beside agentproc, refuses to run under one.
	sandbox runtime.Sandbox
	// questions: the session was opened to ask the host questions
	// (OpenRequest.Questions); without it question says "no answer"
	// without asking, as a runtime whose questions nobody hears.
	questions    bool
	id           string
	dir          string
	env          map[string]string
	pidFile      string
	prose        string // ProseEnv's script, "" for none
	store        sessionstate.Store[int]
	limits       sessionstate.Store[int] // ratelimit steps taken, per session
	host         runtime.Host
	*turn.Runner // keeps a Cancel that arrives while a turn starts

	mu       sync.Mutex
	turn     *turnState // the turn in flight, nil between turns
	proc     runtime.ProcessInfo
	children []*child
	closed   bool
	calls    int // tool calls and permission requests so far, for unique ids
	// ctx is the context use the session last reported; what compactions
	// dropped comes off every later turn's.
	ctx contextState
}

// turnState is what Cancel needs of the turn in flight.
type turnState struct {
	cancel       context.CancelFunc
	ignoreCancel bool
}

func (s *session) ID() string { return s.id }

func (s *session) Process() runtime.ProcessInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// cancelled cancels ts, unless its script ignores Cancel.
func (s *session) cancelled(ts *turnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ts.ignoreCancel {
		ts.cancel()
	}
}

// Close stops the turn in flight, even one that ignores Cancel, and kills
// every child process.
func (s *session) Close(ctx context.Context) error {
	s.Runner.Close(nil)
	s.mu.Lock()
	if s.turn != nil {
		s.turn.cancel()
	}
	children := s.children
	s.children, s.closed = nil, true
	s.mu.Unlock()
	var errs []error
	for _, c := range children {
		c.signal()
	}
	for _, c := range children {
		errs = append(errs, c.wait(ctx))
	}
	return errors.Join(errs...)
}

func (s *session) nextID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return fmt.Sprintf("%s_%d", prefix, s.calls)
}

func (s *session) Prompt(ctx context.Context, t runtime.Turn) (runtime.TurnResult, error) {
	failed := runtime.TurnResult{StopReason: runtime.StopError}
	tr, err := s.Runner.Begin(ctx)
	if err != nil {
		return failed, err
	}
	defer s.Runner.End(tr)
	script, err := loadScript(t.Text)
	if err != nil {
		return failed, err
	}
	steps, err := Parse(script)
	if err != nil && s.prose != "" {
		steps, err = Parse(s.prose)
	}
	if err != nil {
		return failed, runtime.Errorf(runtime.FaultUser, "scripted: %v", err)
	}
	var n int
	if err := s.store.Update(func(turns map[string]int) error { turns[s.id]++; n = turns[s.id]; return nil }); err != nil {
		return failed, err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ts := &turnState{cancel: cancel}
	s.mu.Lock()
	s.turn = ts
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.turn = nil
		s.mu.Unlock()
	}()
	// Cancel (also one kept from before Begin) reaches the script here.
	go func() {
		select {
		case <-tr.Cancelled():
			s.cancelled(ts)
		case <-ctx.Done():
		}
	}()

	r := &run{s: s, ctx: ctx, turn: ts, images: t.Images}
	for _, st := range steps {
		if st.Cmd == "announce" {
			s.say(fmt.Sprintf("turn %d", n))
			break
		}
	}
	for _, st := range steps {
		if ctx.Err() != nil {
			return r.result(runtime.StopCancelled), nil
		}
		if res, err := r.step(st); err != nil || res.StopReason != "" {
			return res, err
		}
	}
	if ctx.Err() != nil {
		return r.result(runtime.StopCancelled), nil
	}
	return r.result(runtime.StopEndTurn), nil
}

// loadScript returns the prompt, or the file an "@file:/abs/path" prompt
// names.
func loadScript(prompt string) (string, error) {
	path, ok := strings.CutPrefix(strings.TrimSpace(prompt), "@file:")
	if !ok {
		return prompt, nil
	}
	if !strings.HasPrefix(path, "/") {
		return "", runtime.Errorf(runtime.FaultUser, "scripted: @file: needs an absolute path, got %q", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", runtime.Errorf(runtime.FaultUser, "scripted: reading the script: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxScriptFile+1))
	if err != nil {
		return "", runtime.Errorf(runtime.FaultUser, "scripted: reading the script %s: %v", path, err)
	}
	if len(data) > maxScriptFile {
		return "", runtime.Errorf(runtime.FaultUser, "scripted: the script %s is larger than %d bytes", path, maxScriptFile)
	}
	return string(data), nil
}

// say emits a message chunk. It writes the chunk's JSON itself rather than
// building a map (runtime.EmitJSON): a flood is the event path's benchmark,
// and a plugin that has bytes should not pay for maps.
func (s *session) say(text string) {
	data := runtime.AppendMessageChunkJSON(make([]byte, 0, 128+len(text)), s.id, text)
	if err := runtime.EmitJSON(s.host, runtime.EventMessageChunk, data); err != nil {
		s.host.Logger().Error("scripted: a message chunk did not encode", "error", err)
	}
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
