package ochttp

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// fakeHost records events and answers permissions with one option.
type fakeHost struct {
	mu     sync.Mutex
	events []runtime.Event
	asked  []runtime.PermissionRequest
	answer string // option id; "" cancels
	onAsk  func()
}

func (h *fakeHost) Emit(ev runtime.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev)
}

func (h *fakeHost) AskPermission(ctx context.Context, req runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	h.mu.Lock()
	h.asked = append(h.asked, req)
	onAsk := h.onAsk
	h.mu.Unlock()
	if onAsk != nil {
		onAsk()
		<-ctx.Done()
		return runtime.PermissionDecision{}, ctx.Err()
	}
	for _, o := range req.Options {
		if o.ID == h.answer {
			return runtime.PermissionDecision{Outcome: runtime.OutcomeSelected, OptionID: o.ID, Kind: runtime.DecisionKind(o.Kind)}, nil
		}
	}
	return runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}, nil
}

func (h *fakeHost) Logger() hclog.Logger { return hclog.NewNullLogger() }

func (h *fakeHost) text(typ runtime.EventType) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, ev := range h.events {
		if ev.Type == typ {
			b.WriteString(ev.Fields["content"].(map[string]any)["text"].(string))
		}
	}
	return b.String()
}

func (h *fakeHost) types() []runtime.EventType {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []runtime.EventType
	for _, ev := range h.events {
		out = append(out, ev.Type)
	}
	return out
}

func open(t *testing.T, f *fakeServer, h *fakeHost, mutate func(*runtime.OpenRequest)) runtime.Session {
	t.Helper()
	req := runtime.OpenRequest{Backend: Name, Dir: t.TempDir(), ServerURL: f.URL(), Env: map[string]string{ServerURLEnv: "", PasswordEnv: ""}}
	if mutate != nil {
		mutate(&req)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := New().Open(ctx, req, h)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func prompt(t *testing.T, s runtime.Session, text string) runtime.TurnResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	r, err := s.Prompt(ctx, runtime.Turn{ID: "t1", Text: text})
	if err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	return r
}

func TestTurns(t *testing.T) {
	cases := []struct {
		name, prompt, answer string
		stop                 runtime.StopReason
		text, final          string
		tool                 string // last tool.call_update status
		asked                int
	}{
		{name: "plain", prompt: "hi", stop: runtime.StopEndTurn, text: "DONE", final: "DONE"},
		{name: "allow", prompt: "ask permission", answer: "once", stop: runtime.StopEndTurn, text: "DONE", final: "DONE", tool: "completed", asked: 1},
		{name: "allow always", prompt: "ask permission", answer: "always", stop: runtime.StopEndTurn, text: "DONE", final: "DONE", tool: "completed", asked: 1},
		{name: "reject", prompt: "ask permission", answer: "reject", stop: runtime.StopEndTurn, text: "REJECTED", final: "REJECTED", tool: "failed", asked: 1},
		{name: "cancelled answer cancels the turn", prompt: "ask permission", answer: "", stop: runtime.StopCancelled, tool: "in_progress", asked: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeServer(t)
			h := &fakeHost{answer: c.answer}
			s := open(t, f, h, nil)
			r := prompt(t, s, c.prompt)
			if r.StopReason != c.stop || r.FinalOutput != c.final {
				t.Errorf("result %+v, want stop %s final %q", r, c.stop, c.final)
			}
			if got := h.text(runtime.EventMessageChunk); got != c.text {
				t.Errorf("message text %q, want %q (events %v)", got, c.text, h.types())
			}
			if len(h.asked) != c.asked {
				t.Errorf("%d permission requests, want %d", len(h.asked), c.asked)
			}
			if c.tool != "" {
				var last string
				for _, ev := range h.events {
					if ev.Type == runtime.EventToolCallUpdate {
						last, _ = ev.Fields["status"].(string)
					}
				}
				if last != c.tool {
					t.Errorf("last tool status %q, want %q (events %v)", last, c.tool, h.types())
				}
			}
			if c.asked > 0 && c.answer != "" && !containsCall(f.callList(), "POST /permission/per_") {
				t.Errorf("no permission reply in %v", f.callList())
			}
			if c.answer != "" && f.lastReply() != c.answer {
				t.Errorf("reply %q, want %q", f.lastReply(), c.answer)
			}
			if r.StopReason != runtime.StopCancelled && (r.Usage == nil || r.Usage.InputTokens == 0) {
				t.Errorf("no usage: %+v", r.Usage)
			}
			if r.Extra["unknown_frames"] != int64(0) || r.Extra["runtime_version"] != "1.18.33-fake" {
				t.Errorf("extra %v", r.Extra)
			}
		})
	}
}

func containsCall(calls []string, prefix string) bool {
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			return true
		}
	}
	return false
}

func TestCancelAborts(t *testing.T) {
	f := newFakeServer(t)
	h := &fakeHost{}
	s := open(t, f, h, nil)
	go func() {
		for h.text(runtime.EventMessageChunk) == "" {
			time.Sleep(5 * time.Millisecond)
		}
		_ = s.Cancel(context.Background())
	}()
	start := time.Now()
	r := prompt(t, s, "Count slowly")
	if r.StopReason != runtime.StopCancelled {
		t.Fatalf("stop %q, want cancelled", r.StopReason)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("the cancelled turn took %s", time.Since(start))
	}
	if !containsCall(f.callList(), "POST /session/"+s.ID()+"/abort") {
		t.Errorf("no abort in %v", f.callList())
	}
	// The session goes on after a cancel.
	if r := prompt(t, s, "again"); r.StopReason != runtime.StopEndTurn {
		t.Errorf("turn after cancel: %+v", r)
	}
}

func TestCancelBeforePrompt(t *testing.T) {
	f := newFakeServer(t)
	s := open(t, f, &fakeHost{}, nil)
	// sdk/plugin says a turn is starting as soon as the host's Prompt
	// arrives; a Cancel after that and before Prompt is kept for the turn.
	s.(runtime.TurnStarter).TurnStarting()
	_ = s.Cancel(context.Background())
	if r := prompt(t, s, "hi"); r.StopReason != runtime.StopCancelled {
		t.Fatalf("stop %q, want cancelled", r.StopReason)
	}
}

func TestCancelDuringPermission(t *testing.T) {
	f := newFakeServer(t)
	h := &fakeHost{}
	var s runtime.Session
	asked := make(chan struct{})
	h.onAsk = func() { close(asked) }
	s = open(t, f, h, nil)
	go func() {
		<-asked
		_ = s.Cancel(context.Background())
	}()
	if r := prompt(t, s, "ask permission"); r.StopReason != runtime.StopCancelled {
		t.Fatalf("stop %q, want cancelled", r.StopReason)
	}
}

func TestResume(t *testing.T) {
	f := newFakeServer(t)
	s := open(t, f, &fakeHost{}, nil)
	prompt(t, s, "hi")
	id := s.ID()
	_ = s.Close(context.Background())
	h := &fakeHost{}
	s2 := open(t, f, h, func(r *runtime.OpenRequest) { r.ResumeSessionID = id })
	if s2.ID() != id {
		t.Fatalf("resumed id %q, want %q", s2.ID(), id)
	}
	if r := prompt(t, s2, "hi"); r.FinalOutput != "DONE" {
		t.Errorf("resumed turn %+v", r)
	}
	if !containsCall(f.callList(), "GET /session/"+id) {
		t.Errorf("no GET /session/%s in %v", id, f.callList())
	}
	_, err := New().Open(context.Background(), runtime.OpenRequest{Dir: t.TempDir(), ServerURL: f.URL(), ResumeSessionID: "ses_nope"}, h)
	if !errors.Is(err, runtime.ErrSessionNotFound) && !strings.Contains(err.Error(), runtime.ErrSessionNotFound.Error()) {
		t.Errorf("resume of an unknown session: %v", err)
	}
	if runtime.FaultOf(err) != runtime.FaultUser {
		t.Errorf("fault %s, want user", runtime.FaultOf(err))
	}
}

func TestSessionError(t *testing.T) {
	f := newFakeServer(t)
	s := open(t, f, &fakeHost{}, nil)
	r := prompt(t, s, "fail")
	if r.StopReason != runtime.StopError || !strings.Contains(r.Extra["error_message"].(string), "the model is down") {
		t.Fatalf("result %+v", r)
	}
}

func TestUnknownFrames(t *testing.T) {
	f := newFakeServer(t)
	h := &fakeHost{}
	s := open(t, f, h, nil)
	r := prompt(t, s, "unknown event")
	if r.Extra["unknown_frames"] != int64(1) {
		t.Fatalf("unknown_frames %v, want 1", r.Extra["unknown_frames"])
	}
	if h.text(runtime.EventMessageChunk) != "DONE" {
		t.Errorf("text %q", h.text(runtime.EventMessageChunk))
	}
}

// TestStreamCut: the SSE stream drops mid-turn and text goes on while it
// is down; the turn still ends once with every word.
func TestStreamCut(t *testing.T) {
	f := newFakeServer(t)
	h := &fakeHost{}
	s := open(t, f, h, nil)
	r := prompt(t, s, "cut")
	if r.StopReason != runtime.StopEndTurn || r.FinalOutput != "DONE" {
		t.Fatalf("result %+v", r)
	}
	if got := h.text(runtime.EventMessageChunk); got != "Hello worldDONE" {
		t.Errorf("text %q, want %q", got, "Hello worldDONE")
	}
	if !containsCall(f.callList(), "GET /session/"+s.ID()+"/message") {
		t.Errorf("history not re-read: %v", f.callList())
	}
	if r := prompt(t, s, "hi"); r.FinalOutput != "DONE" || h.text(runtime.EventMessageChunk) != "Hello worldDONEDONE" {
		t.Errorf("next turn %+v, text %q", r, h.text(runtime.EventMessageChunk))
	}
}

func TestDirectoryAndAuth(t *testing.T) {
	f := newFakeServer(t)
	f.password = "sekret"
	dir := t.TempDir()
	s := open(t, f, &fakeHost{}, func(r *runtime.OpenRequest) {
		r.Dir = dir
		r.Env[PasswordEnv] = "sekret"
		r.Options = map[string]any{ExplicitDirOption: true}
	})
	prompt(t, s, "hi")
	for _, c := range f.callList() {
		if !strings.Contains(c, "directory=") {
			t.Errorf("call without ?directory=: %s", c)
		}
	}
	// user:pass@ in the URL; no --dir given: no directory.
	f2 := newFakeServer(t)
	f2.password = "pw2"
	s2 := open(t, f2, &fakeHost{}, func(r *runtime.OpenRequest) {
		r.ServerURL = strings.Replace(f2.URL(), "http://", "http://opencode:pw2@", 1)
	})
	prompt(t, s2, "hi")
	for _, c := range f2.callList() {
		if strings.Contains(c, "directory=") {
			t.Errorf("call with ?directory= though --dir was not explicit: %s", c)
		}
	}
	_, err := New().Open(context.Background(), runtime.OpenRequest{Dir: dir, ServerURL: f.URL(), Env: map[string]string{PasswordEnv: "wrong"}}, &fakeHost{})
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("wrong password: %v", err)
	}
}
