package claudecode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// fakeClaude is internal/fakeclaude, built once for all tests, and
// pluginBin the plugin itself.
var fakeClaude, pluginBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fakeclaude")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeClaude = filepath.Join(dir, "claude")
	build := exec.Command("go", "build", "-o", fakeClaude, "../fakeclaude")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building fakeclaude:", err)
		os.Exit(1)
	}
	pluginBin = filepath.Join(dir, "avenor-plugin-claude")
	build = exec.Command("go", "build", "-o", pluginBin, "../..")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the plugin:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testHost records events and answers permissions with decide.
type testHost struct {
	mu     sync.Mutex
	events []runtime.Event
	perms  []runtime.PermissionRequest
	decide func(runtime.PermissionRequest) runtime.PermissionDecision
}

func (h *testHost) Emit(ev runtime.Event) {
	h.mu.Lock()
	h.events = append(h.events, ev)
	h.mu.Unlock()
}

func (h *testHost) AskPermission(ctx context.Context, req runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	h.mu.Lock()
	h.perms = append(h.perms, req)
	decide := h.decide
	h.mu.Unlock()
	if decide == nil {
		<-ctx.Done()
		return runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}, ctx.Err()
	}
	return decide(req), nil
}

func (h *testHost) Logger() hclog.Logger { return hclog.NewNullLogger() }

func (h *testHost) of(typ runtime.EventType) []runtime.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []runtime.Event
	for _, e := range h.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func choose(kind string) func(runtime.PermissionRequest) runtime.PermissionDecision {
	return func(r runtime.PermissionRequest) runtime.PermissionDecision {
		for _, o := range r.Options {
			if o.Kind == kind {
				return runtime.PermissionDecision{Outcome: runtime.OutcomeSelected, OptionID: o.ID, Kind: kind, Message: "not now"}
			}
		}
		return runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}
	}
}

// fakeEnv is one fake claude world: transcripts, session state and a log
// of argv and stdin lines.
type fakeEnv struct {
	state, log, dir string
	env             map[string]string
}

func newFakeEnv(t *testing.T) *fakeEnv {
	t.Helper()
	td, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	f := &fakeEnv{state: filepath.Join(root, "state"), log: filepath.Join(root, "fake.log"), dir: filepath.Join(root, "work")}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f.env = map[string]string{"FAKECLAUDE_TRANSCRIPTS": td, "FAKECLAUDE_STATE": f.state, "FAKECLAUDE_LOG": f.log}
	return f
}

func (f *fakeEnv) request(resume string) runtime.OpenRequest {
	return runtime.OpenRequest{Backend: StreamName, Dir: f.dir, ResumeSessionID: resume, Env: f.env,
		Options: map[string]any{"binary": fakeClaude}}
}

func (f *fakeEnv) logText() string {
	b, _ := os.ReadFile(f.log)
	return string(b)
}

func testBackend() *streamBackend {
	return &streamBackend{stopGrace: 500 * time.Millisecond, cancelWait: 500 * time.Millisecond}
}

func open(t *testing.T, f *fakeEnv, h *testHost, req runtime.OpenRequest) *streamSession {
	t.Helper()
	s, err := testBackend().Open(context.Background(), req, h)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s.(*streamSession)
}

func prompt(t *testing.T, s runtime.Session, text string) (runtime.TurnResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return s.Prompt(ctx, runtime.Turn{ID: "t1", Text: text})
}

func TestPermissionReplay(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
		wantStatus string // of the tool.call_update
		wantLog    []string
		notLog     []string
	}{
		{name: "allow", kind: runtime.KindAllowOnce, wantStatus: "completed",
			wantLog: []string{`"behavior":"allow"`, `"updatedInput":{"command":"echo hello \u003e out.txt"}`}, notLog: []string{"updatedPermissions"}},
		{name: "allow-always", kind: runtime.KindAllowAlways, wantStatus: "completed",
			wantLog: []string{`"behavior":"allow"`, `"updatedPermissions":[{"behavior":"allow"`}},
		{name: "deny", kind: runtime.KindReject, wantStatus: "failed",
			wantLog: []string{`"behavior":"deny"`, `"message":"not now"`, `"interrupt":false`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeEnv(t)
			h := &testHost{decide: choose(tc.kind)}
			s := open(t, f, h, f.request(""))
			res, err := prompt(t, s, "Ask for permission, then scenario:permission")
			if err != nil || res.StopReason != runtime.StopEndTurn {
				t.Fatalf("turn ended %q, %v; want end_turn", res.StopReason, err)
			}
			if len(h.perms) != 1 {
				t.Fatalf("%d permission requests, want 1", len(h.perms))
			}
			p := h.perms[0]
			if p.ID != "42fa8c1f-d952-433f-934e-36727973aa03" || p.Tool != "Bash" || len(p.Options) != 3 {
				t.Errorf("permission request %+v: want the recorded request id, tool Bash and allow / allow always / reject", p)
			}
			calls, updates := h.of(runtime.EventToolCall), h.of(runtime.EventToolCallUpdate)
			if len(calls) != 1 || calls[0].Fields["toolCallId"] != "call_000002" || calls[0].Fields["kind"] != "execute" {
				t.Errorf("tool.call events %v, want one for call_000002 of kind execute", calls)
			}
			if len(updates) != 1 || updates[0].Fields["status"] != tc.wantStatus {
				t.Errorf("tool.call_update events %v, want one %s", updates, tc.wantStatus)
			}
			if chunks := h.of(runtime.EventMessageChunk); len(chunks) != 1 {
				t.Errorf("%d agent.message_chunk events, want 1 (the delta, not the whole message again): %v", len(chunks), chunks)
			}
			if !res.HasFinalOutput || res.FinalOutput != "DONE" {
				t.Errorf("final output %q (%v), want DONE", res.FinalOutput, res.HasFinalOutput)
			}
			if res.Usage == nil || res.Usage.InputTokens != 20 || res.Usage.OutputTokens != 10 || res.Usage.TotalTokens != 30 {
				t.Errorf("usage %+v, want 20 in / 10 out from the result", res.Usage)
			}
			if res.Extra["cost_usd"] != 0.00021 || res.Extra["unknown_frames"] != int64(0) || res.Extra["status"] != "done" || res.Extra["runtime_version"] != "2.1.332" {
				t.Errorf("session.end extras %v", res.Extra)
			}
			log := f.logText()
			for _, w := range tc.wantLog {
				if !strings.Contains(log, w) {
					t.Errorf("claude's stdin lacks %s:\n%s", w, log)
				}
			}
			for _, w := range tc.notLog {
				if strings.Contains(log, w) {
					t.Errorf("claude's stdin has %s:\n%s", w, log)
				}
			}
		})
	}
}

func TestArgvAndPromptOverStdin(t *testing.T) {
	f := newFakeEnv(t)
	h := &testHost{}
	req := f.request("")
	req.Model, req.Thinking = "claude-opus-4-1", "high"
	s := open(t, f, h, req)
	res, err := prompt(t, s, "Reply with one word: secret-prompt-text")
	if err != nil || res.StopReason != runtime.StopEndTurn {
		t.Fatalf("turn ended %q, %v", res.StopReason, err)
	}
	argv := strings.SplitN(f.logText(), "\n", 2)[0]
	for _, w := range []string{`"-p"`, `"--input-format","stream-json"`, `"--output-format","stream-json"`, `"--verbose"`,
		`"--permission-prompt-tool","stdio"`, `"--model","claude-opus-4-1"`, `"--effort","high"`, `"--session-id","` + s.ID() + `"`} {
		if !strings.Contains(argv, w) {
			t.Errorf("argv lacks %s: %s", w, argv)
		}
	}
	if strings.Contains(argv, "secret-prompt-text") {
		t.Errorf("the prompt is in argv: %s", argv)
	}
	if th := h.of(runtime.EventThoughtChunk); len(th) != 1 {
		t.Errorf("%d agent.thought_chunk events, want 1", len(th))
	}
	if _, err := testBackend().Open(context.Background(), runtime.OpenRequest{Dir: f.dir, Thinking: "minimal", Env: f.env,
		Options: map[string]any{"binary": fakeClaude}}, h); runtime.FaultOf(err) != runtime.FaultUser {
		t.Errorf("thinking minimal: %v, want a user error", err)
	}
}

func TestUnknownFrame(t *testing.T) {
	f := newFakeEnv(t)
	h := &testHost{}
	s := open(t, f, h, f.request(""))
	res, err := prompt(t, s, "scenario:unknown")
	if err != nil || res.StopReason != runtime.StopEndTurn {
		t.Fatalf("turn ended %q, %v", res.StopReason, err)
	}
	if res.Extra["unknown_frames"] != int64(1) {
		t.Errorf("unknown_frames %v, want 1", res.Extra["unknown_frames"])
	}
	natives := h.of(runtime.EventNative)
	if len(natives) != 1 || natives[0].Fields["native_type"] != "brand_new_frame" {
		t.Errorf("avenor.native events %v, want one brand_new_frame", natives)
	}
	// The count is per turn.
	if res, _ := prompt(t, s, "plain"); res.Extra["unknown_frames"] != int64(0) {
		t.Errorf("second turn: unknown_frames %v, want 0", res.Extra["unknown_frames"])
	}
}

func TestInterrupt(t *testing.T) {
	f := newFakeEnv(t)
	h := &testHost{}
	s := open(t, f, h, f.request(""))
	done := make(chan struct{})
	var res runtime.TurnResult
	var err error
	go func() {
		defer close(done)
		res, err = prompt(t, s, "Count slowly from one to two hundred")
	}()
	waitFor(t, func() bool { return len(h.of(runtime.EventMessageChunk)) >= 3 })
	start := time.Now()
	_ = s.Cancel(context.Background())
	<-done
	if err != nil || res.StopReason != runtime.StopCancelled {
		t.Fatalf("turn ended %q, %v; want cancelled", res.StopReason, err)
	}
	if d := time.Since(start); d > 400*time.Millisecond {
		t.Errorf("the interrupted turn took %v to end", d)
	}
	if !strings.Contains(f.logText(), `"request":{"subtype":"interrupt"}`) {
		t.Errorf("no interrupt control request was sent:\n%s", f.logText())
	}
	// The process lives on for the next turn.
	if res, err := prompt(t, s, "plain"); err != nil || res.StopReason != runtime.StopEndTurn {
		t.Errorf("turn after the interrupt ended %q, %v", res.StopReason, err)
	}
}

// TestInterruptIgnored: a CLI that never answers the interrupt is killed
// after CancelWait with everything in its process group.
func TestInterruptIgnored(t *testing.T) {
	f := newFakeEnv(t)
	f.env["FAKECLAUDE_IGNORE_INTERRUPT"] = "1"
	f.env["FAKECLAUDE_CHILD"] = "1"
	h := &testHost{}
	s := open(t, f, h, f.request(""))
	pgid := s.Process().PGID
	done := make(chan struct{})
	var res runtime.TurnResult
	go func() {
		defer close(done)
		res, _ = prompt(t, s, "Count slowly")
	}()
	waitFor(t, func() bool { return len(h.of(runtime.EventMessageChunk)) >= 1 })
	_ = s.Cancel(context.Background())
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("the turn did not end after Cancel")
	}
	if res.StopReason != runtime.StopCancelled {
		t.Errorf("stop reason %q, want cancelled", res.StopReason)
	}
	_ = s.Close(context.Background())
	waitFor(t, func() bool { return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) })
	if _, err := prompt(t, s, "plain"); err == nil {
		t.Error("a turn on a killed session succeeded")
	}
}

func TestResume(t *testing.T) {
	f := newFakeEnv(t)
	h := &testHost{}
	first := open(t, f, h, f.request(""))
	if res, err := prompt(t, first, "plain"); err != nil || res.StopReason != runtime.StopEndTurn {
		t.Fatalf("first turn %q, %v", res.StopReason, err)
	}
	id := first.ID()
	_ = first.Close(context.Background())

	again := open(t, f, h, f.request(id))
	if again.ID() != id {
		t.Errorf("resumed session id %q, want %q", again.ID(), id)
	}
	if res, err := prompt(t, again, "plain"); err != nil || res.StopReason != runtime.StopEndTurn {
		t.Fatalf("resumed turn %q, %v", res.StopReason, err)
	}
	if !strings.Contains(f.logText(), `"--resume","`+id+`"`) {
		t.Errorf("the second process was not started with --resume %s:\n%s", id, f.logText())
	}

	for _, unknown := range []string{"99999999-2222-3333-4444-555555555556", "not-a-uuid"} {
		_, err := testBackend().Open(context.Background(), f.request(unknown), h)
		if runtime.FaultOf(err) != runtime.FaultUser || !strings.Contains(fmt.Sprint(err), runtime.ErrSessionNotFound.Error()) {
			t.Errorf("resuming %q: %v; want a user error saying the session was not found", unknown, err)
		}
	}
}

func TestStartFailures(t *testing.T) {
	f := newFakeEnv(t)
	h := &testHost{}
	notClaude := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(notClaude, []byte("#!/bin/sh\necho 'claude 1.0 (a different tool)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		bin    string
		env    map[string]string
		want   string
		notIn  string
		checks bool
	}{
		{name: "missing", bin: filepath.Join(t.TempDir(), "nope", "claude"), want: "not found"},
		{name: "not-claude-code", bin: notClaude, want: "is not Claude Code"},
		{name: "early-exit", bin: fakeClaude, env: map[string]string{"FAKECLAUDE_EXIT": "early"}, want: "crashed on purpose"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := f.request("")
			req.Options = map[string]any{"binary": tc.bin}
			req.Env = map[string]string{}
			for k, v := range f.env {
				req.Env[k] = v
			}
			for k, v := range tc.env {
				req.Env[k] = v
			}
			start := time.Now()
			_, err := testBackend().Open(context.Background(), req, h)
			if err == nil || !strings.Contains(err.Error(), tc.want) || runtime.FaultOf(err) != runtime.FaultRuntime {
				t.Errorf("Open: %v (fault %s); want a runtime error saying %q", err, runtime.FaultOf(err), tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Open took %v to fail", d)
			}
			r := testBackend().Check(context.Background(), runtime.CheckRequest{Options: req.Options, Env: req.Env})
			if tc.name != "early-exit" && (r.Ready || !strings.Contains(r.Message, tc.want)) {
				t.Errorf("Check: %+v; want not ready saying %q", r, tc.want)
			}
		})
	}
}

// TestConformance runs the sdk's kit against claude-stream over real gRPC,
// driving the fake claude.
func TestConformance(t *testing.T) {
	f := newFakeEnv(t)
	plugintest.Run(t, plugintest.Harness{
		Plugin:   plugin.Info{Name: "claude", Version: "test"},
		Backends: []runtime.Backend{testBackend()},
		Open: func(req *runtime.OpenRequest) {
			req.Options = map[string]any{"binary": fakeClaude}
			req.Env = f.env
		},
	})
}

// TestConformanceBinary runs the kit against the built plugin binary: the
// handshake as a process, a crash mid-turn, resume in a fresh process.
func TestConformanceBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the plugin binary")
	}
	f := newFakeEnv(t)
	plugintest.RunBinary(t, pluginBin, plugintest.Harness{
		// The PTY backend needs the real TUI (e2e/claude_test.go).
		Only: []string{StreamName},
		Open: func(req *runtime.OpenRequest) {
			req.Options = map[string]any{"binary": fakeClaude}
			req.Env = f.env
		},
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// questionHost is a testHost that hears questions, answering with answer.
type questionHost struct {
	testHost
	qmu    sync.Mutex
	asked  []runtime.QuestionRequest
	answer runtime.QuestionAnswer
}

func (h *questionHost) AskQuestion(_ context.Context, req runtime.QuestionRequest) (runtime.QuestionAnswer, error) {
	h.qmu.Lock()
	defer h.qmu.Unlock()
	h.asked = append(h.asked, req)
	return h.answer, nil
}

// AskUserQuestion's can_use_tool reaches the host as a question, not a
// permission; an answer goes back as an allow whose updatedInput carries
// answers keyed by the question's text (a multi choice joined by ", "), no
// answer as a deny that says so.
func TestAskUserQuestion(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  runtime.QuestionAnswer
		wantLog []string
	}{
		{"answered", runtime.QuestionAnswer{Answered: true, Answers: [][]string{{"Blue", "Red"}}},
			[]string{`"behavior":"allow"`, `"answers":{"Which colours?":"Blue, Red"}`, `"questions":[{`}},
		{"no answer", runtime.QuestionAnswer{}, []string{`"behavior":"deny"`, `did not answer the question`, `"interrupt":false`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeEnv(t)
			h := &questionHost{answer: tc.answer}
			req := f.request("")
			req.Questions = true
			s, err := testBackend().Open(context.Background(), req, h)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			res, err := prompt(t, s, "scenario:question")
			if err != nil || res.StopReason != runtime.StopEndTurn {
				t.Fatalf("turn ended %q, %v", res.StopReason, err)
			}
			if len(h.perms) != 0 {
				t.Errorf("AskUserQuestion became a permission request too: %+v", h.perms)
			}
			h.qmu.Lock()
			if len(h.asked) != 1 || h.asked[0].ID != "ask-1" || len(h.asked[0].Prompts) != 1 ||
				h.asked[0].Prompts[0].Question != "Which colours?" || !h.asked[0].Prompts[0].Multi ||
				strings.Join(h.asked[0].Prompts[0].Options, ",") != "Blue,Red" {
				t.Errorf("questions %+v", h.asked)
			}
			h.qmu.Unlock()
			log := f.logText()
			for _, w := range tc.wantLog {
				if !strings.Contains(log, w) {
					t.Errorf("claude's stdin lacks %s:\n%s", w, log)
				}
			}
		})
	}
}

// Images go before the text of the user line as base64 image blocks; a
// file whose content changed since the host checked it is refused.
func TestImagesAsBlocks(t *testing.T) {
	dir := t.TempDir()
	png := filepath.Join(dir, "a.png")
	if err := os.WriteFile(png, []byte("\x89PNG\r\n\x1a\nrest"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFakeEnv(t)
	s := open(t, f, &testHost{}, f.request(""))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := s.Prompt(ctx, runtime.Turn{ID: "t1", Text: "look", Images: []runtime.Image{{Path: png, MediaType: "image/png"}}})
	if err != nil || res.StopReason != runtime.StopEndTurn {
		t.Fatalf("turn ended %q, %v", res.StopReason, err)
	}
	want := `"content":[{"source":{"data":"iVBORw0KGgpyZXN0","media_type":"image/png","type":"base64"},"type":"image"},{"text":"look","type":"text"}]`
	if log := f.logText(); !strings.Contains(log, want) {
		t.Errorf("the user line lacks %s:\n%s", want, log)
	}
	if _, err := s.Prompt(ctx, runtime.Turn{ID: "t2", Text: "look", Images: []runtime.Image{{Path: png, MediaType: "image/jpeg"}}}); err == nil ||
		!strings.Contains(err.Error(), "no longer the image/jpeg") {
		t.Errorf("a changed image: %v", err)
	}
}

// Without OpenRequest.Questions, AskUserQuestion stays a permission request,
// as before questions existed.
func TestAskUserQuestionIsAPermissionWithoutQuestions(t *testing.T) {
	f := newFakeEnv(t)
	h := &questionHost{testHost: testHost{decide: choose(runtime.KindAllowOnce)}}
	s, err := testBackend().Open(context.Background(), f.request(""), h)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if _, err := prompt(t, s, "scenario:question"); err != nil {
		t.Fatal(err)
	}
	h.qmu.Lock()
	asked := len(h.asked)
	h.qmu.Unlock()
	if asked != 0 || len(h.perms) != 1 || h.perms[0].Tool != "AskUserQuestion" {
		t.Errorf("questions %d, permissions %+v: want AskUserQuestion as one permission request", asked, h.perms)
	}
}
