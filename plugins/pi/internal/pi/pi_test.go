package pi

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest"
	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/hashicorp/go-hclog"
)

// testHost records events and answers permissions with decide.
type testHost struct {
	mu     sync.Mutex
	events []runtime.Event
	perms  []runtime.PermissionRequest
	decide func(runtime.PermissionRequest) (runtime.PermissionDecision, error)
	asked  chan struct{}
}

func (h *testHost) Emit(ev runtime.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev)
}

func (h *testHost) AskPermission(ctx context.Context, req runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	h.mu.Lock()
	h.perms = append(h.perms, req)
	h.mu.Unlock()
	if h.asked != nil {
		h.asked <- struct{}{}
	}
	if h.decide == nil {
		<-ctx.Done()
		return runtime.PermissionDecision{}, ctx.Err()
	}
	return h.decide(req)
}

func (h *testHost) Logger() hclog.Logger { return hclog.NewNullLogger() }

func (h *testHost) types() []runtime.EventType {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []runtime.EventType
	for _, e := range h.events {
		out = append(out, e.Type)
	}
	return out
}

func (h *testHost) count(typ runtime.EventType) int {
	n := 0
	for _, t := range h.types() {
		if t == typ {
			n++
		}
	}
	return n
}

func selectOption(id string) func(runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	return func(req runtime.PermissionRequest) (runtime.PermissionDecision, error) {
		for _, o := range req.Options {
			if o.ID == id {
				return runtime.PermissionDecision{Outcome: runtime.OutcomeSelected, OptionID: id, Kind: runtime.DecisionKind(o.Kind)}, nil
			}
		}
		return runtime.PermissionDecision{}, nil
	}
}

// fakeEnv runs the test binary as pi with the given script; record names
// the file where the fake writes its argv and PI_* environment.
func fakeEnv(t *testing.T, script string) (env map[string]string, record string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	record = filepath.Join(t.TempDir(), "record.json")
	abs, _ := filepath.Abs(filepath.Join("testdata", script))
	return map[string]string{BinaryEnv: exe, "PI_FAKE": "1", "GORACE": "atexit_sleep_ms=0", "PI_FAKE_SCRIPT": abs, "PI_FAKE_RECORD": record}, record
}

func openFake(t *testing.T, script string, host *testHost, mod func(*runtime.OpenRequest)) (runtime.Session, string) {
	t.Helper()
	env, record := fakeEnv(t, script)
	req := runtime.OpenRequest{Backend: Name, Dir: t.TempDir(), Env: env, StateDir: t.TempDir(), Options: map[string]any{}}
	if mod != nil {
		mod(&req)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := New().Open(ctx, req, host)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s, record
}

func prompt(t *testing.T, s runtime.Session, text string) runtime.TurnResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := s.Prompt(ctx, runtime.Turn{ID: "t1", Text: text})
	if err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	return res
}

func TestAllowRunsTheTool(t *testing.T) {
	h := &testHost{decide: selectOption("Allow")}
	s, record := openFake(t, "allow.txt", h, nil)
	if s.ID() != "fake-session-1" && !strings.HasPrefix(s.ID(), "fake-") {
		t.Fatalf("session id %q", s.ID())
	}
	res := prompt(t, s, "Create out.txt containing hello using the shell.")
	if res.StopReason != runtime.StopEndTurn || res.FinalOutput != "DONE" {
		t.Fatalf("result %+v", res)
	}
	if res.Usage == nil || res.Usage.InputTokens != 270 || res.Usage.OutputTokens != 22 || res.Usage.CachedReadTokens != 10 || res.Usage.TotalTokens != 292 {
		t.Fatalf("usage %+v", res.Usage)
	}
	if res.Extra["unknown_frames"] != int64(0) || res.Extra["runtime_version"] != "0.73.1" {
		t.Fatalf("extra %+v", res.Extra)
	}
	if len(h.perms) != 1 {
		t.Fatalf("permissions %+v", h.perms)
	}
	p := h.perms[0]
	if p.ID != "19c2ff5c-0001" || p.Tool != "bash" || p.Fields["kind"] != "command" || p.Fields["ui_request_id"] != "19c2ff5c-0001" ||
		p.Fields["input"] != `{"command":"echo hello > out.txt"}` || !strings.Contains(p.Question, "echo hello > out.txt") {
		t.Fatalf("permission request %+v", p)
	}
	if len(p.Options) != 2 || p.Options[0].Kind != runtime.KindAllowOnce || p.Options[1].Kind != runtime.KindReject {
		t.Fatalf("options %+v", p.Options)
	}
	want := []string{"tool.call", "avenor.tool.start", "tool.call_update", "avenor.tool.update", "tool.call_update", "avenor.tool.end"}
	var got []string
	for _, et := range h.types() {
		typ := string(et)
		if strings.HasPrefix(typ, "tool.") || strings.HasPrefix(typ, "avenor.tool.") {
			got = append(got, typ)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("tool events %v, want %v", got, want)
	}
	if h.count(runtime.EventMessageChunk) != 1 || h.count(runtime.EventNative) != 0 {
		t.Fatalf("events %v", h.types())
	}
	// The gate is loaded and sessions are kept under the state directory.
	var rec struct{ Args []string }
	b, _ := os.ReadFile(record)
	_ = json.Unmarshal(b, &rec)
	args := strings.Join(rec.Args, " ")
	if !strings.Contains(args, "--mode rpc --session-dir ") || !strings.Contains(args, " -e ") || strings.Contains(args, "--no-session") {
		t.Fatalf("args %q", args)
	}
	gate := rec.Args[len(rec.Args)-1]
	if b, err := os.ReadFile(gate); err != nil || string(b) != string(gateSource) {
		t.Fatalf("gate extension %s: %v", gate, err)
	}
}

func TestRejectIsAnAnswer(t *testing.T) {
	h := &testHost{decide: selectOption("Deny")}
	s, _ := openFake(t, "reject.txt", h, nil)
	res := prompt(t, s, "Create out.txt containing hello using the shell.")
	if res.StopReason != runtime.StopEndTurn || res.FinalOutput != "DONE" {
		t.Fatalf("result %+v", res)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var failed bool
	for _, e := range h.events {
		if e.Type == runtime.EventToolCallUpdate && e.Fields["status"] == "failed" {
			failed = true
		}
	}
	if !failed {
		t.Fatal("no failed tool.call_update after the reject")
	}
}

func TestCancelMidStream(t *testing.T) {
	h := &testHost{}
	s, _ := openFake(t, "cancel.txt", h, nil)
	done := make(chan runtime.TurnResult, 1)
	go func() { done <- prompt(t, s, "answer SLOW") }()
	deadline := time.Now().Add(10 * time.Second)
	for h.count(runtime.EventMessageChunk) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("no text streamed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	_ = s.Cancel(context.Background())
	select {
	case res := <-done:
		if res.StopReason != runtime.StopCancelled {
			t.Fatalf("result %+v", res)
		}
		if time.Since(start) > 2*time.Second {
			t.Fatalf("cancel took %v", time.Since(start))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("turn did not end after Cancel")
	}
}

func TestCancelWithDialogOpenAnswersItFirst(t *testing.T) {
	h := &testHost{asked: make(chan struct{}, 1)} // never decides
	s, _ := openFake(t, "cancel_dialog.txt", h, nil)
	done := make(chan runtime.TurnResult, 1)
	go func() { done <- prompt(t, s, "write out.txt") }()
	select {
	case <-h.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("no permission request")
	}
	if p := h.perms[0]; p.Tool != "write" {
		t.Fatalf("permission %+v", p)
	}
	_ = s.Cancel(context.Background())
	select {
	case res := <-done:
		// The fake exits 2 if the abort came before the cancelled answer.
		if res.StopReason != runtime.StopCancelled {
			t.Fatalf("result %+v", res)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("turn did not end after Cancel")
	}
	if p := s.Process(); p.PID == 0 {
		t.Fatal("no process")
	}
}

func TestThinkingLevel(t *testing.T) {
	h := &testHost{}
	s, record := openFake(t, "thinking.txt", h, func(r *runtime.OpenRequest) {
		r.Thinking = "max"
		r.Model = "fake-model"
		r.Options["provider"] = "fake"
	})
	res := prompt(t, s, "think")
	if res.StopReason != runtime.StopEndTurn || h.count(runtime.EventThoughtChunk) != 1 {
		t.Fatalf("result %+v, events %v", res, h.types())
	}
	b, _ := os.ReadFile(record)
	if !strings.Contains(string(b), `"--provider","fake","--model","fake-model","--thinking","xhigh"`) {
		t.Fatalf("args %s", b)
	}
}

func TestUnknownFrameIsCounted(t *testing.T) {
	h := &testHost{}
	s, _ := openFake(t, "unknown.txt", h, nil)
	res := prompt(t, s, "hi")
	if res.Extra["unknown_frames"] != int64(1) || res.Extra["runtime_version"] != "0.73.1" {
		t.Fatalf("extra %+v", res.Extra)
	}
	if h.count(runtime.EventNative) != 1 {
		t.Fatalf("events %v", h.types())
	}
	// U+2028 inside a JSON string is not a line break.
	if res.FinalOutput != "ok\u2028still one line" {
		t.Fatalf("final output %q", res.FinalOutput)
	}
}

func TestGateOffAndAgent(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "agents.json"), []byte(`{"reviewer":{"model":"fake-model","provider":"fake"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PI_AGENT", "stale")
	h := &testHost{}
	s, record := openFake(t, "thinking.txt", h, func(r *runtime.OpenRequest) {
		r.Options[OptionPermissionGate] = false
		r.Options[OptionAgentProfile] = "strict"
		r.Agent = "reviewer"
		r.Env["PI_CODING_AGENT_DIR"] = dir
	})
	prompt(t, s, "x")
	var rec struct {
		Args           []string
		PIAgent        string `json:"PI_AGENT"`
		PIAgentProfile string `json:"PI_AGENT_PROFILE"`
	}
	b, _ := os.ReadFile(record)
	_ = json.Unmarshal(b, &rec)
	args := strings.Join(rec.Args, " ")
	if strings.Contains(args, " -e ") || !strings.Contains(args, "--provider fake --model fake-model") || rec.PIAgent != "reviewer" || rec.PIAgentProfile != "strict" {
		t.Fatalf("record %s", b)
	}
}

func TestOpenErrors(t *testing.T) {
	cases := []struct {
		name  string
		mod   func(*runtime.OpenRequest)
		fault runtime.Fault
		want  string
	}{
		{"missing binary", func(r *runtime.OpenRequest) { r.Env[BinaryEnv] = "/nonexistent/pi" }, runtime.FaultRuntime, "not found"},
		{"old version", func(r *runtime.OpenRequest) { r.Env["PI_FAKE_VERSION"] = "0.41.2" }, runtime.FaultRuntime, "too old"},
		{"garbled version", func(r *runtime.OpenRequest) { r.Env["PI_FAKE_VERSION"] = "pi" }, runtime.FaultRuntime, "cannot read the pi version"},
		{"early exit", func(r *runtime.OpenRequest) { r.Env["PI_FAKE_EXIT"] = "No API key found for provider fake" }, runtime.FaultRuntime, "No API key found"},
		{"unknown agent", func(r *runtime.OpenRequest) { r.Agent = "ghost"; r.Env["PI_CODING_AGENT_DIR"] = r.Dir }, runtime.FaultUser, "agents.json"},
		{"unknown session", func(r *runtime.OpenRequest) { r.ResumeSessionID = "nope" }, runtime.FaultUser, "session not found"},
		{"bad gate option", func(r *runtime.OpenRequest) { r.Options[OptionPermissionGate] = "no" }, runtime.FaultUser, "permission_gate"},
		{"bad thinking", func(r *runtime.OpenRequest) { r.Thinking = "minimal" }, runtime.FaultUser, "accepted: off low medium high xhigh max"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, _ := fakeEnv(t, "allow.txt")
			req := runtime.OpenRequest{Backend: Name, Dir: t.TempDir(), Env: env, StateDir: t.TempDir(), Options: map[string]any{}}
			c.mod(&req)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			s, err := New().Open(ctx, req, &testHost{})
			if err == nil {
				_ = s.Close(ctx)
				t.Fatal("Open succeeded")
			}
			if runtime.FaultOf(err) != c.fault || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v (fault %s), want %s containing %q", err, runtime.FaultOf(err), c.fault, c.want)
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("took %v", time.Since(start))
			}
		})
	}
}

func TestSecondPromptWhileRunningIsRefused(t *testing.T) {
	h := &testHost{}
	s, _ := openFake(t, "cancel.txt", h, nil)
	done := make(chan struct{})
	go func() { defer close(done); prompt(t, s, "slow") }()
	for h.count(runtime.EventMessageChunk) < 1 {
		time.Sleep(10 * time.Millisecond)
	}
	_, err := s.Prompt(context.Background(), runtime.Turn{Text: "again"})
	if err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second prompt: %v", err)
	}
	_ = s.Cancel(context.Background())
	<-done
}

func TestConformance(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	scripts, _ := filepath.Abs(filepath.Join("testdata", "kit"))
	plugintest.Run(t, plugintest.Harness{
		Plugin:   plugin.Info{Name: "pi", Version: "test"},
		Backends: []runtime.Backend{New()},
		Prompt: func(_ string, kind plugintest.TurnKind) (string, bool) {
			return string(kind), true
		},
		Open: func(req *runtime.OpenRequest) {
			req.Env = map[string]string{BinaryEnv: exe, "PI_FAKE": "1", "GORACE": "atexit_sleep_ms=0", "PI_FAKE_SCRIPTS": scripts}
		},
	})
}
