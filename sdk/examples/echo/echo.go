package echo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/sessionstate"
	"github.com/avenor-go/avenor/sdk/turn"
)

// Version is the plugin's version, reported in Describe. Release builds set
// it with -ldflags "-X github.com/avenor-go/avenor/sdk/examples/echo.Version=1.1.0".
var Version = "0.1.0"

// Name is the backend name.
const Name = "echo"

// delay paces the streamed chunks, like a real model, so a Cancel can land
// mid-stream.
const delay = 20 * time.Millisecond

// New returns the echo backend.
func New() runtime.Backend { return backend{} }

type backend struct{}

func (backend) Info() runtime.BackendInfo {
	return runtime.BackendInfo{
		Name:        Name,
		Description: "echoes each prompt back; an example plugin that needs no runtime",
		// Be honest: the host validates flags against this table, and
		// `avenor backends` prints it.
		Capabilities: runtime.Supports(
			runtime.CapNewSessions, runtime.CapResume, runtime.CapPrompt, runtime.CapCancel,
			runtime.CapEventStreaming, runtime.CapPermissionRelay, runtime.CapPrewarm,
		),
		ResumeScope:    runtime.ResumeCrossProcess, // the state file outlives the process
		ThinkingLevels: nil,                        // --thinking is refused
		EventTypes: []runtime.EventType{
			runtime.EventThoughtChunk, runtime.EventMessageChunk,
			runtime.EventToolCall, runtime.EventToolCallUpdate,
		},
	}
}

func (backend) Check(context.Context, runtime.CheckRequest) runtime.Readiness {
	return runtime.Readiness{Ready: true, Message: "echo needs no runtime binary"}
}

func (b backend) Open(_ context.Context, req runtime.OpenRequest, host runtime.Host) (runtime.Session, error) {
	// A permission mode, launch-context field or sandbox the backend does
	// not declare is refused, never ignored: the session must not run
	// broader than asked. (plugin.Serve refuses them too, before Open.)
	if err := runtime.CheckLaunch(b.Info(), req.PermissionMode, req.Launch); err != nil {
		return nil, runtime.Errorf(runtime.FaultUser, "%v", err).WithCode(runtime.CodeUnsupported)
	}
	if err := runtime.CheckSandbox(b.Info(), req.Sandbox); err != nil {
		return nil, runtime.Errorf(runtime.FaultUser, "%v", err).WithCode(runtime.CodeUnsupported)
	}
	st := sessionstate.Store[int]{Dir: req.StateDir, Name: Name + "-sessions"}
	id := req.ResumeSessionID
	var err error
	if id == "" {
		id = "echo_" + randomHex()
		err = st.Update(func(turns map[string]int) error { turns[id] = 0; return nil })
	} else {
		err = st.Update(func(turns map[string]int) error {
			if _, ok := turns[id]; !ok {
				return runtime.Errorf(runtime.FaultUser, "echo session %q not found (state dir %q); start a new session instead", id, req.StateDir).WithCode(runtime.CodeSessionNotFound)
			}
			return nil
		})
	}
	if err != nil {
		return nil, err
	}
	return &session{id: id, dir: req.Dir, store: st, host: host, Runner: turn.New(turn.Config{Backend: Name})}, nil
}

type session struct {
	id    string
	dir   string
	store sessionstate.Store[int]
	host  runtime.Host

	// turns owns the turn in flight, its cancel (kept when it arrives
	// while the turn is starting) and Close.
	*turn.Runner
}

func (s *session) ID() string                   { return s.id }
func (s *session) Process() runtime.ProcessInfo { return runtime.ProcessInfo{} } // no runtime process

func (s *session) Close(context.Context) error {
	s.Runner.Close(nil) // no process to stop: cancelling the turn is all
	return nil
}

func (s *session) Prompt(ctx context.Context, t runtime.Turn) (runtime.TurnResult, error) {
	tr, err := s.Runner.Begin(ctx)
	if err != nil {
		return runtime.TurnResult{StopReason: runtime.StopError}, err
	}
	defer s.Runner.End(tr)
	ctx = tr.Context() // ends on Cancel, Close or ctx ending
	cancelled := runtime.TurnResult{StopReason: runtime.StopCancelled}
	if tr.IsCancelled() {
		return cancelled, nil
	}

	var turn int
	err = s.store.Update(func(turns map[string]int) error { turns[s.id]++; turn = turns[s.id]; return nil })
	if err != nil {
		return runtime.TurnResult{StopReason: runtime.StopError}, err
	}
	reply := fmt.Sprintf("echo (turn %d): %s", turn, t.Text)

	if strings.Contains(strings.ToLower(t.Text), "permission") {
		note, err := s.writeReply(ctx, turn, reply)
		if errors.Is(err, errCancelled) {
			return cancelled, nil
		}
		if err != nil {
			return runtime.TurnResult{StopReason: runtime.StopError}, err
		}
		reply += "\n" + note
	}

	for _, thought := range []string{"The user said something. ", "I will echo it back."} {
		s.host.Emit(runtime.ThoughtChunk(s.id, thought))
		if !pause(ctx) {
			return cancelled, nil
		}
	}

	// A harmless tool: "read" the prompt and report its length.
	callID := fmt.Sprintf("call_%d_measure", turn)
	s.toolCall(callID, "measure the prompt", "read", map[string]any{"text": t.Text})
	if !pause(ctx) {
		return cancelled, nil
	}
	s.toolDone(callID, "read", "completed", map[string]any{"bytes": len(t.Text)})

	for _, word := range strings.SplitAfter(reply, " ") {
		s.host.Emit(runtime.MessageChunk(s.id, word))
		if !pause(ctx) {
			return cancelled, nil
		}
	}

	in, out := int64(len(t.Text)), int64(len(reply))
	return runtime.TurnResult{
		StopReason:     runtime.StopEndTurn,
		Usage:          &runtime.Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out},
		FinalOutput:    reply,
		HasFinalOutput: true,
	}, nil
}

// errCancelled: the turn was cancelled, or the host answered a permission
// request with "cancelled" (which cancels the turn too).
var errCancelled = errors.New("turn cancelled")

// writeReply asks the host before writing reply.txt, the way a real agent
// asks before it edits a file. It never decides policy itself.
func (s *session) writeReply(ctx context.Context, turn int, reply string) (string, error) {
	callID := fmt.Sprintf("call_%d_write", turn)
	s.toolCall(callID, "write reply.txt", "edit", map[string]any{"path": "reply.txt"})
	d, err := s.host.AskPermission(ctx, runtime.PermissionRequest{
		ID: fmt.Sprintf("perm_%d", turn),
		Options: []runtime.PermissionOption{
			{ID: "allow_once", Kind: runtime.KindAllowOnce, Name: "Allow once"},
			{ID: "allow_always", Kind: runtime.KindAllowAlways, Name: "Always allow"},
			{ID: "reject", Kind: runtime.KindReject, Name: "Reject"},
		},
		Tool:     "echo",
		Question: "May echo write reply.txt?",
	})
	switch {
	case ctx.Err() != nil || (err == nil && d.Outcome == runtime.OutcomeCancelled):
		err = errCancelled
	case err == nil && !d.Allowed():
		s.toolDone(callID, "edit", "failed", nil)
		return "I did not write reply.txt: permission was rejected.", nil
	case err == nil:
		if werr := os.WriteFile(filepath.Join(s.dir, "reply.txt"), []byte(reply+"\n"), 0o644); werr != nil {
			err = runtime.Errorf(runtime.FaultUser, "echo: writing reply.txt in %q: %v", s.dir, werr)
		}
	}
	if err != nil {
		s.toolDone(callID, "edit", "failed", nil)
		return "", err
	}
	s.toolDone(callID, "edit", "completed", nil)
	return "I wrote reply.txt.", nil
}

func (s *session) toolCall(id, title, kind string, input map[string]any) {
	s.host.Emit(runtime.NewEvent(runtime.EventToolCall, map[string]any{
		"session_id": s.id, "session_update": "tool_call",
		"toolCallId": id, "title": title, "kind": kind, "status": "pending", "rawInput": input,
	}))
}

func (s *session) toolDone(id, kind, status string, output map[string]any) {
	f := map[string]any{
		"session_id": s.id, "session_update": "tool_call_update",
		"toolCallId": id, "kind": kind, "status": status,
	}
	if output != nil {
		f["rawOutput"] = output
	}
	s.host.Emit(runtime.NewEvent(runtime.EventToolCallUpdate, f))
}

// pause waits between chunks; false when the turn was cancelled.
func pause(ctx context.Context) bool {
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
