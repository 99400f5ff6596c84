package plugin

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/avenor-go/avenor/sdk/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeBackend is a minimal backend for wire tests: its Prompt runs fn.
type fakeBackend struct {
	fn func(ctx context.Context, h runtime.Host, t runtime.Turn) (runtime.TurnResult, error)
}

func (b *fakeBackend) Info() runtime.BackendInfo {
	return runtime.BackendInfo{Name: "fake", Capabilities: runtime.CapabilityTable{runtime.CapPrompt: runtime.Supported}}
}
func (b *fakeBackend) Check(context.Context, runtime.CheckRequest) runtime.Readiness {
	return runtime.Readiness{Ready: true, Version: "1"}
}
func (b *fakeBackend) Open(_ context.Context, req runtime.OpenRequest, h runtime.Host) (runtime.Session, error) {
	if req.ResumeSessionID == "missing" {
		return nil, runtime.Errorf(runtime.FaultUser, "session %q not found", req.ResumeSessionID).WithCode(runtime.CodeSessionNotFound)
	}
	return &fakeSession{b: b, h: h}, nil
}

type fakeSession struct {
	b *fakeBackend
	h runtime.Host
}

func (s *fakeSession) ID() string                   { return "ses_fake" }
func (s *fakeSession) Process() runtime.ProcessInfo { return runtime.ProcessInfo{PID: 42, PGID: 42} }
func (s *fakeSession) Cancel(context.Context) error { return nil }
func (s *fakeSession) Close(context.Context) error  { return nil }
func (s *fakeSession) Prompt(ctx context.Context, t runtime.Turn) (runtime.TurnResult, error) {
	return s.b.fn(ctx, s.h, t)
}

// recHost records what reaches the host, in order.
type recHost struct {
	mu     sync.Mutex
	log    []string
	decide func(runtime.PermissionRequest) runtime.PermissionDecision
}

func (h *recHost) add(s string) { h.mu.Lock(); h.log = append(h.log, s); h.mu.Unlock() }
func (h *recHost) Emit(ev runtime.Event) {
	txt, _ := ev.Fields["content"].(map[string]any)["text"].(string)
	h.add(string(ev.Type) + ":" + txt)
}
func (h *recHost) AskPermission(ctx context.Context, req runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	panic("RecordPermission must be used")
}
func (h *recHost) RecordPermission(ctx context.Context, req runtime.PermissionRequest) func(context.Context) (runtime.PermissionDecision, error) {
	h.add("permission:" + req.ID)
	return func(context.Context) (runtime.PermissionDecision, error) { return h.decide(req), nil }
}
func (h *recHost) Logger() hclog.Logger { return hclog.NewNullLogger() }

func serveFake(t *testing.T, fn func(context.Context, runtime.Host, runtime.Turn) (runtime.TurnResult, error)) runtime.Backend {
	t.Helper()
	c, err := ServeInProcess(context.Background(), Info{Name: "fake", Version: "0.0.1"}, nil, &fakeBackend{fn: fn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	if got := c.Info(); got.Name != "fake" || got.Version != "0.0.1" {
		t.Fatalf("Describe = %+v", got)
	}
	b, ok := c.Backend("fake")
	if !ok {
		t.Fatal("backend fake not described")
	}
	return b
}

func TestTurnKeepsOrderAcrossPermission(t *testing.T) {
	b := serveFake(t, func(ctx context.Context, h runtime.Host, turn runtime.Turn) (runtime.TurnResult, error) {
		h.Emit(runtime.MessageChunk("ses_fake", "before"))
		d, err := h.AskPermission(ctx, runtime.PermissionRequest{ID: "p1", Options: []runtime.PermissionOption{{ID: "ok", Kind: "allow_once"}}})
		if err != nil {
			return runtime.TurnResult{}, err
		}
		h.Emit(runtime.MessageChunk("ses_fake", "after:"+d.OptionID))
		return runtime.TurnResult{StopReason: runtime.StopEndTurn, Usage: &runtime.Usage{InputTokens: 3}, Extra: map[string]any{"x": 1.0}}, nil
	})
	h := &recHost{decide: func(r runtime.PermissionRequest) runtime.PermissionDecision {
		return runtime.PermissionDecision{Outcome: runtime.OutcomeSelected, OptionID: "ok", Kind: runtime.KindAllowOnce}
	}}
	sess, err := b.Open(context.Background(), runtime.OpenRequest{Backend: "fake"}, h)
	if err != nil {
		t.Fatal(err)
	}
	if sess.ID() != "ses_fake" || sess.Process().PGID != 42 {
		t.Fatalf("opened %q %+v", sess.ID(), sess.Process())
	}
	res, err := sess.Prompt(context.Background(), runtime.Turn{ID: "1", Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "end_turn" || res.Usage.InputTokens != 3 || res.Extra["x"] != 1.0 {
		t.Fatalf("result %+v", res)
	}
	want := []string{"agent.message_chunk:before", "permission:p1", "agent.message_chunk:after:ok"}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.log) != len(want) {
		t.Fatalf("log %q, want %q", h.log, want)
	}
	for i := range want {
		if h.log[i] != want[i] {
			t.Fatalf("log %q, want %q", h.log, want)
		}
	}
	if err := sess.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusalCarriesFault(t *testing.T) {
	b := serveFake(t, nil)
	_, err := b.Open(context.Background(), runtime.OpenRequest{Backend: "fake", ResumeSessionID: "missing"}, &recHost{})
	var rerr *runtime.Error
	if !errors.As(err, &rerr) || rerr.Fault != runtime.FaultUser || rerr.Message != `session "missing" not found` {
		t.Fatalf("err = %#v", err)
	}
	// Its kind crosses the wire too: the host tells it without the text.
	if !errors.Is(err, runtime.ErrSessionNotFound) {
		t.Errorf("errors.Is(err, ErrSessionNotFound) is false across gRPC: %#v", err)
	}
}

func TestPanicInPromptIsAPluginFault(t *testing.T) {
	b := serveFake(t, func(context.Context, runtime.Host, runtime.Turn) (runtime.TurnResult, error) {
		panic("boom")
	})
	sess, err := b.Open(context.Background(), runtime.OpenRequest{Backend: "fake"}, &recHost{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	res, err := sess.Prompt(context.Background(), runtime.Turn{ID: "1"})
	if runtime.FaultOf(err) != runtime.FaultPlugin || res.StopReason != runtime.StopError {
		t.Fatalf("res %+v err %v", res, err)
	}
}

func TestFloodIsBatchedAndComplete(t *testing.T) {
	const n = 5000
	b := serveFake(t, func(ctx context.Context, h runtime.Host, _ runtime.Turn) (runtime.TurnResult, error) {
		for i := 0; i < n; i++ {
			h.Emit(runtime.MessageChunk("", "x"))
		}
		return runtime.TurnResult{StopReason: runtime.StopEndTurn}, nil
	})
	h := &recHost{}
	sess, err := b.Open(context.Background(), runtime.OpenRequest{Backend: "fake"}, h)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := sess.Prompt(ctx, runtime.Turn{ID: "1"}); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.log) != n {
		t.Fatalf("got %d events, want %d (every event before the turn end)", len(h.log), n)
	}
}

func TestUnknownBackendIsAUserFault(t *testing.T) {
	c, err := ServeInProcess(context.Background(), Info{Name: "fake", Version: "1"}, nil, &fakeBackend{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Kill()
	rb := &remoteBackend{info: runtime.BackendInfo{Name: "nope"}, client: c.backends["fake"].client, owner: c}
	_, err = rb.Open(context.Background(), runtime.OpenRequest{Backend: "nope"}, &recHost{})
	if runtime.FaultOf(err) != runtime.FaultUser {
		t.Fatalf("err = %v", err)
	}
}

// A cancel that arrives after its turn ended must not cancel the next one.
func TestStaleCancelDoesNotReachTheNextTurn(t *testing.T) {
	var cancels int
	var mu sync.Mutex
	b := &countingCancelBackend{fakeBackend: fakeBackend{fn: func(ctx context.Context, h runtime.Host, t runtime.Turn) (runtime.TurnResult, error) {
		return runtime.TurnResult{StopReason: runtime.StopEndTurn}, nil
	}}, onCancel: func() { mu.Lock(); cancels++; mu.Unlock() }}
	c, err := ServeInProcess(context.Background(), Info{Name: "fake", Version: "1"}, nil, b)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Kill()
	rb, _ := c.Backend("fake")
	sess, err := rb.Open(context.Background(), runtime.OpenRequest{Backend: "fake"}, &recHost{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	if _, err := sess.Prompt(context.Background(), runtime.Turn{ID: "1"}); err != nil {
		t.Fatal(err)
	}
	_ = sess.Cancel(context.Background()) // turn 1 is over
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if cancels != 0 {
		t.Fatalf("a cancel for an ended turn reached the backend %d times", cancels)
	}
}

type countingCancelBackend struct {
	fakeBackend
	onCancel func()
}

func (b *countingCancelBackend) Open(ctx context.Context, req runtime.OpenRequest, h runtime.Host) (runtime.Session, error) {
	return &countingCancelSession{fakeSession: fakeSession{b: &b.fakeBackend, h: h}, onCancel: b.onCancel}, nil
}

type countingCancelSession struct {
	fakeSession
	onCancel func()
}

func (s *countingCancelSession) Cancel(context.Context) error { s.onCancel(); return nil }
