package appserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// testHost records events and answers permission requests with pick.
type testHost struct {
	pick func(runtime.PermissionRequest) runtime.PermissionDecision

	mu     sync.Mutex
	events []runtime.Event
	perms  []runtime.PermissionRequest
	onEmit func(runtime.Event)
}

func (h *testHost) Emit(ev runtime.Event) {
	h.mu.Lock()
	h.events = append(h.events, ev)
	f := h.onEmit
	h.mu.Unlock()
	if f != nil {
		f(ev)
	}
}

func (h *testHost) AskPermission(ctx context.Context, req runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	h.mu.Lock()
	h.perms = append(h.perms, req)
	h.mu.Unlock()
	if h.pick == nil {
		<-ctx.Done()
		return runtime.PermissionDecision{}, ctx.Err()
	}
	return h.pick(req), nil
}

// asked is how many permission requests reached the host.
func (h *testHost) asked() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.perms)
}

func (h *testHost) Logger() hclog.Logger { return hclog.NewNullLogger() }

func (h *testHost) types() []runtime.EventType {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []runtime.EventType
	for _, ev := range h.events {
		out = append(out, ev.Type)
	}
	return out
}

func choose(id string) func(runtime.PermissionRequest) runtime.PermissionDecision {
	return func(req runtime.PermissionRequest) runtime.PermissionDecision {
		for _, o := range req.Options {
			if o.ID == id {
				return runtime.PermissionDecision{Outcome: runtime.OutcomeSelected, OptionID: id, Kind: runtime.DecisionKind(o.Kind)}
			}
		}
		return runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}
	}
}

// fakeRequest is an OpenRequest that runs this test binary as codex in
// the given mode, logging what the plugin sent to the returned file.
func fakeRequest(t *testing.T, mode string) (runtime.OpenRequest, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "client.ndjson")
	return runtime.OpenRequest{Backend: Name, Dir: t.TempDir(), Options: map[string]any{"binary": exe},
		Env: map[string]string{FakeModeEnv: mode, FakeLogEnv: log, "CODEX_HOME": t.TempDir()}}, log
}

func transcript(t *testing.T, name string) string {
	p, err := filepath.Abs(filepath.Join("testdata", name+".transcript"))
	if err != nil {
		t.Fatal(err)
	}
	return "transcript:" + p
}

func openSession(t *testing.T, req runtime.OpenRequest, h *testHost) runtime.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := New().Open(ctx, req, h)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func prompt(t *testing.T, s runtime.Session, text string) runtime.TurnResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := s.Prompt(ctx, runtime.Turn{ID: "t1", Text: text})
	if err != nil {
		t.Fatalf("prompt: %v", err)
	}
	return res
}

func TestAllow(t *testing.T) {
	req, log := fakeRequest(t, transcript(t, "allow"))
	h := &testHost{pick: choose("accept")}
	s := openSession(t, req, h)
	if s.ID() != "01a226ca-9bca-7792-a5f9-544ce3fc6ce2" {
		t.Errorf("session id = %q", s.ID())
	}
	res := prompt(t, s, "Create out.txt containing hello using the shell.")
	if res.StopReason != runtime.StopEndTurn || res.FinalOutput != "DONE" || !res.HasFinalOutput {
		t.Errorf("result = %+v", res)
	}
	if res.Usage == nil || res.Usage.InputTokens != 20 || res.Usage.OutputTokens != 10 || res.Usage.TotalTokens != 30 {
		t.Errorf("usage = %+v, want the two model calls summed (20/10/30)", res.Usage)
	}
	if res.Extra["unknown_frames"] != int64(0) || res.Extra["runtime_version"] != "0.171.0" {
		t.Errorf("extra = %v, want unknown_frames 0, runtime_version 0.171.0", res.Extra)
	}
	if len(h.perms) != 1 {
		t.Fatalf("permission requests = %d, want 1", len(h.perms))
	}
	p := h.perms[0]
	if p.ID != "0" || p.Tool != "bash" || !strings.Contains(p.Question, "echo hello > out.txt") {
		t.Errorf("permission request = %+v", p)
	}
	var ids []string
	for _, o := range p.Options {
		ids = append(ids, o.ID+":"+o.Kind)
	}
	if got := strings.Join(ids, " "); got != "accept:allow_once acceptWithExecpolicyAmendment:allow_always decline:reject_once cancel:reject" {
		t.Errorf("options = %s", got)
	}
	types := fmt.Sprint(h.types())
	for _, want := range []runtime.EventType{runtime.EventToolCall, runtime.EventToolCallUpdate, runtime.EventMessageChunk, EventItemStarted, EventItemCompleted, runtime.EventWarning} {
		if !strings.Contains(types, string(want)) {
			t.Errorf("no %s in %s", want, types)
		}
	}
	if strings.Index(types, string(runtime.EventToolCall)+" ") > strings.Index(types, string(runtime.EventMessageChunk)) {
		t.Errorf("tool.call after the message: %s", types)
	}
	sent, _ := os.ReadFile(log)
	for _, want := range []string{`"approvalPolicy":"untrusted"`, `"method":"initialized"`, `"decision":"accept"`} {
		if !strings.Contains(string(sent), want) {
			t.Errorf("the plugin did not send %s:\n%s", want, sent)
		}
	}
}

func TestReject(t *testing.T) {
	req, log := fakeRequest(t, transcript(t, "reject"))
	h := &testHost{pick: choose("decline")}
	s := openSession(t, req, h)
	res := prompt(t, s, "Create out.txt please")
	// Codex goes on after a decline: the command is declined, the model
	// is asked again and the turn completes.
	if res.StopReason != runtime.StopEndTurn || res.FinalOutput != "DONE" {
		t.Errorf("result = %+v", res)
	}
	var failed bool
	for _, ev := range h.events {
		if ev.Type == runtime.EventToolCallUpdate && ev.Fields["status"] == "failed" && ev.Fields["codex_status"] == "declined" {
			failed = true
		}
	}
	if !failed {
		t.Errorf("no failed (declined) tool.call_update: %v", h.types())
	}
	if sent, _ := os.ReadFile(log); !strings.Contains(string(sent), `"decision":"decline"`) {
		t.Errorf("decline not sent:\n%s", sent)
	}
}

func TestRejectByBrokerWithoutOptionPicksDecline(t *testing.T) {
	req, _ := fakeRequest(t, transcript(t, "reject"))
	h := &testHost{pick: func(runtime.PermissionRequest) runtime.PermissionDecision {
		return runtime.PermissionDecision{Outcome: runtime.OutcomeSelected, OptionID: "deny-by-rule", Kind: runtime.KindReject}
	}}
	s := openSession(t, req, h)
	if res := prompt(t, s, "Create out.txt please"); res.StopReason != runtime.StopEndTurn {
		t.Errorf("result = %+v", res)
	}
}

func TestCancel(t *testing.T) {
	req, log := fakeRequest(t, transcript(t, "cancel"))
	h := &testHost{}
	s := openSession(t, req, h)
	var once sync.Once
	h.onEmit = func(ev runtime.Event) {
		if ev.Type == runtime.EventMessageChunk {
			once.Do(func() { go s.Cancel(context.Background()) })
		}
	}
	start := time.Now()
	res := prompt(t, s, "answer SLOW")
	if res.StopReason != runtime.StopCancelled {
		t.Errorf("stop reason = %q, want cancelled", res.StopReason)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cancel took %s", d)
	}
	if sent, _ := os.ReadFile(log); strings.Count(string(sent), "turn/interrupt") != 1 {
		t.Errorf("want exactly one turn/interrupt:\n%s", sent)
	}
}

func TestCancelDuringApprovalAnswersCancel(t *testing.T) {
	req, log := fakeRequest(t, "auto")
	h := &testHost{} // never answers: only the cancel ends the wait
	s := openSession(t, req, h)
	promptDone, cancelled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(cancelled)
		// Cancel once the approval waits at the host: a tool call event
		// alone can precede the request by any time on a loaded machine.
		// A turn that ends without asking stops the wait (and fails below).
		for h.asked() == 0 {
			select {
			case <-promptDone:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		_ = s.Cancel(context.Background())
	}()
	res := prompt(t, s, "Ask for permission first, then touch a file.")
	close(promptDone)
	<-cancelled
	if res.StopReason != runtime.StopCancelled {
		t.Errorf("stop reason = %q", res.StopReason)
	}
	if sent, _ := os.ReadFile(log); !strings.Contains(string(sent), `"decision":"cancel"`) {
		t.Errorf("the pending approval was not answered cancel:\n%s", sent)
	}
}

func TestResume(t *testing.T) {
	req, log := fakeRequest(t, transcript(t, "resume"))
	req.ResumeSessionID = "01a226ca-9bca-7792-a5f9-544ce3fc6ce2"
	h := &testHost{pick: choose("accept")}
	s := openSession(t, req, h)
	if s.ID() != req.ResumeSessionID {
		t.Errorf("id = %q", s.ID())
	}
	if res := prompt(t, s, "Say hello again"); res.StopReason != runtime.StopEndTurn {
		t.Errorf("result = %+v", res)
	}
	if sent, _ := os.ReadFile(log); !strings.Contains(string(sent), `"method":"thread/resume","params":{"threadId":"01a226ca-9bca-7792-a5f9-544ce3fc6ce2"`) {
		t.Errorf("no thread/resume sent:\n%s", sent)
	}
}

func TestResumeUnknownThread(t *testing.T) {
	req, _ := fakeRequest(t, transcript(t, "resume-unknown"))
	req.ResumeSessionID = "01a226ca-0000-0000-0000-000000000000"
	_, err := New().Open(context.Background(), req, &testHost{})
	if !errors.Is(err, runtime.ErrSessionNotFound) && !strings.Contains(err.Error(), runtime.ErrSessionNotFound.Error()) {
		t.Fatalf("err = %v, want session not found", err)
	}
	if runtime.FaultOf(err) != runtime.FaultUser {
		t.Errorf("fault = %s", runtime.FaultOf(err))
	}
}

func TestThinking(t *testing.T) {
	for level, want := range map[string]string{"high": `"effort":"high"`, "max": `"effort":"xhigh"`} {
		t.Run(level, func(t *testing.T) {
			req, log := fakeRequest(t, transcript(t, "allow"))
			req.Thinking = level
			s := openSession(t, req, &testHost{pick: choose("accept")})
			prompt(t, s, "x")
			if sent, _ := os.ReadFile(log); !strings.Contains(string(sent), want) {
				t.Errorf("turn/start without %s:\n%s", want, sent)
			}
		})
	}
	req, _ := fakeRequest(t, "auto")
	req.Thinking = "off"
	if _, err := New().Open(context.Background(), req, &testHost{}); err == nil || runtime.FaultOf(err) != runtime.FaultUser {
		t.Errorf("--thinking off: err = %v, want a user error", err)
	}
}

// TestInitializeParams pins the initialize request of docs/backends.md#codex-app-server-plugin-codex:
// clientInfo is exactly {"name":"avenor","version":"0.0.0"} whatever the
// plugin's version (Codex turns the name into the model request's
// originator) and capabilities.experimentalApi is true, as the original
// sent; the rate-limit opt-out stays.
func TestInitializeParams(t *testing.T) {
	req, log := fakeRequest(t, "auto")
	openSession(t, req, &testHost{})
	sent, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(sent), "\n")
	var m struct {
		Method string `json:"method"`
		Params struct {
			ClientInfo   json.RawMessage            `json:"clientInfo"`
			Capabilities map[string]json.RawMessage `json:"capabilities"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(first), &m); err != nil || m.Method != "initialize" {
		t.Fatalf("first line %q (%v), want the initialize request", first, err)
	}
	if got := string(m.Params.ClientInfo); got != `{"name":"avenor","version":"0.0.0"}` {
		t.Errorf("clientInfo = %s, want {\"name\":\"avenor\",\"version\":\"0.0.0\"}", got)
	}
	if got := string(m.Params.Capabilities["experimentalApi"]); got != "true" {
		t.Errorf("capabilities.experimentalApi = %s, want true: %s", got, first)
	}
	if got := string(m.Params.Capabilities["optOutNotificationMethods"]); got != `["account/rateLimits/updated"]` {
		t.Errorf("capabilities.optOutNotificationMethods = %s: %s", got, first)
	}
}

// TestExperimentalNotificationsAreQuiet replays what codex 0.171.0 sends
// once initialize asks for the experimental API: its thread-state
// notifications are known, not protocol drift.
func TestExperimentalNotificationsAreQuiet(t *testing.T) {
	req, _ := fakeRequest(t, transcript(t, "experimental"))
	h := &testHost{pick: choose("accept")}
	s := openSession(t, req, h)
	res := prompt(t, s, "Create out.txt containing hello using the shell.")
	if res.StopReason != runtime.StopEndTurn || res.FinalOutput != "DONE" {
		t.Errorf("result = %+v", res)
	}
	if res.Extra["unknown_frames"] != int64(0) {
		t.Errorf("unknown_frames = %v, want 0", res.Extra["unknown_frames"])
	}
	for _, ev := range h.events {
		if ev.Type == runtime.EventNative {
			t.Errorf("avenor.native %v for a known notification", ev.Fields["native_type"])
		}
	}
}

func TestUnknownFrameCounted(t *testing.T) {
	req, _ := fakeRequest(t, transcript(t, "unknown-frame"))
	h := &testHost{pick: choose("accept")}
	s := openSession(t, req, h)
	res := prompt(t, s, "x")
	if res.Extra["unknown_frames"] != int64(1) {
		t.Errorf("unknown_frames = %v, want 1", res.Extra["unknown_frames"])
	}
	var native *runtime.Event
	for i, ev := range h.events {
		if ev.Type == runtime.EventNative {
			native = &h.events[i]
		}
	}
	if native == nil || native.Fields["native_type"] != "thread/goal/updated" {
		t.Errorf("avenor.native = %+v", native)
	}
}

func TestMissingBinary(t *testing.T) {
	req, _ := fakeRequest(t, "auto")
	req.Options["binary"] = "/nonexistent/codex"
	_, err := New().Open(context.Background(), req, &testHost{})
	if err == nil || runtime.FaultOf(err) != runtime.FaultRuntime || !strings.Contains(err.Error(), "npm install -g @openai/codex") {
		t.Fatalf("err = %v", err)
	}
	r := New().Check(context.Background(), runtime.CheckRequest{Backend: Name, Options: req.Options})
	if r.Ready || !strings.Contains(r.Message, "not found") {
		t.Errorf("check = %+v", r)
	}
}

func TestCheckReportsVersion(t *testing.T) {
	req, _ := fakeRequest(t, "auto")
	r := New().Check(context.Background(), runtime.CheckRequest{Backend: Name, Options: req.Options, Env: req.Env})
	if !r.Ready || r.Version != "codex-cli "+TestedVersion {
		t.Errorf("check = %+v", r)
	}
}

func TestWrongVersionExitsEarly(t *testing.T) {
	req, _ := fakeRequest(t, "exit")
	start := time.Now()
	_, err := New().Open(context.Background(), req, &testHost{})
	if err == nil || runtime.FaultOf(err) != runtime.FaultRuntime {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"exited during initialize", "unrecognized subcommand", "app-server"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
}

func TestCloseReapsProcessGroup(t *testing.T) {
	req, _ := fakeRequest(t, "auto")
	s, err := New().Open(context.Background(), req, &testHost{})
	if err != nil {
		t.Fatal(err)
	}
	pgid := s.Process().PGID
	if pgid == 0 || s.Process().Version != TestedVersion {
		t.Errorf("process = %+v", s.Process())
	}
	_ = s.Close(context.Background())
	if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process group %d still there after Close: %v", pgid, err)
	}
}

func TestDecisionOptions(t *testing.T) {
	cases := map[string]struct {
		method    string
		available string
		want      string
	}{
		"default":        {methodCommandApproval, ``, "accept acceptForSession decline cancel"},
		"codex 0.171":    {methodCommandApproval, `["accept",{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["ls"]}},"cancel"]`, "accept acceptWithExecpolicyAmendment decline cancel"},
		"permissions":    {methodPermissionsApproval, `["accept"]`, "accept acceptForSession decline"},
		"decline listed": {methodFileChangeApproval, `["decline","accept"]`, "decline accept"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var avail []jsonRaw
			if c.available != "" {
				avail = mustRaws(t, c.available)
			}
			var ids []string
			for _, o := range decisionOptions(c.method, avail) {
				ids = append(ids, o.opt.ID)
			}
			if got := strings.Join(ids, " "); got != c.want {
				t.Errorf("options = %s, want %s", got, c.want)
			}
		})
	}
}

func TestStopReason(t *testing.T) {
	cases := []struct {
		status, info string
		want         runtime.StopReason
	}{
		{"completed", "", runtime.StopEndTurn},
		{"interrupted", "", runtime.StopCancelled},
		{"failed", "contextWindowExceeded", runtime.StopMaxTokens},
		{"failed", "cyberPolicy", runtime.StopRefusal},
		{"failed", "httpConnectionFailed", runtime.StopError},
	}
	for _, c := range cases {
		if got := stopReason(c.status, c.info, false); got != c.want {
			t.Errorf("stopReason(%s, %s) = %s, want %s", c.status, c.info, got, c.want)
		}
	}
}

func TestNoVersionWriter(t *testing.T) {
	var b strings.Builder
	w := noVersionWriter{&b}
	if _, err := w.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"x"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if b.String() != `{"id":1,"method":"x"}`+"\n" {
		t.Errorf("wrote %q", b.String())
	}
}

type jsonRaw = json.RawMessage

func mustRaws(t *testing.T, s string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// questionHost is a testHost that hears questions, answering with answer
// (nil: it cannot hear questions).
type questionHost struct {
	testHost
	qmu    sync.Mutex
	asked  []runtime.QuestionRequest
	answer func(runtime.QuestionRequest) runtime.QuestionAnswer
}

func (h *questionHost) AskQuestion(_ context.Context, req runtime.QuestionRequest) (runtime.QuestionAnswer, error) {
	h.qmu.Lock()
	h.asked = append(h.asked, req)
	h.qmu.Unlock()
	return h.answer(req), nil
}

// Codex's request_user_input reaches the host as a question, one prompt per
// Codex question with the option labels, and the answer goes back keyed by
// the question's id; with no answer Codex gets an empty answer map.
func TestQuestion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer runtime.QuestionAnswer
		want   string
	}{
		{"answered", runtime.QuestionAnswer{Answered: true, Answers: [][]string{{"Red"}}}, `{"answers":{"colour":{"answers":["Red"]}}}`},
		{"no answer", runtime.QuestionAnswer{}, `{"answers":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := fakeRequest(t, "auto")
			req.Questions = true
			h := &questionHost{answer: func(runtime.QuestionRequest) runtime.QuestionAnswer { return tc.answer }}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			sess, err := New().Open(ctx, req, h)
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close(context.Background())
			res := prompt(t, sess, "Ask me which colour.")
			if res.FinalOutput != tc.want {
				t.Errorf("codex got %s, want %s", res.FinalOutput, tc.want)
			}
			h.qmu.Lock()
			defer h.qmu.Unlock()
			if len(h.asked) != 1 {
				t.Fatalf("%d questions, want 1", len(h.asked))
			}
			q := h.asked[0]
			if len(q.Prompts) != 1 || q.Prompts[0].Question != "Which colour?" || q.Prompts[0].Header != "Colour" ||
				strings.Join(q.Prompts[0].Options, ",") != "Blue,Red" || q.Fields["native_method"] != "item/tool/requestUserInput" {
				t.Errorf("question %+v", q)
			}
		})
	}
}

// Images go to Codex as localImage inputs after the text: Codex reads the
// files itself.
func TestImagesGoAsLocalImages(t *testing.T) {
	req, log := fakeRequest(t, "auto")
	s := openSession(t, req, &testHost{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := s.Prompt(ctx, runtime.Turn{ID: "t1", Text: "look", Images: []runtime.Image{
		{Path: "/shots/a.png", MediaType: "image/png"}, {Path: "/shots/b.jpg", MediaType: "image/jpeg"},
	}})
	if err != nil || res.StopReason != runtime.StopEndTurn {
		t.Fatalf("turn ended %q, %v", res.StopReason, err)
	}
	sent, _ := os.ReadFile(log)
	want := `"input":[{"type":"text","text":"look"},{"type":"localImage","path":"/shots/a.png"},{"type":"localImage","path":"/shots/b.jpg"}]`
	if !strings.Contains(string(sent), want) {
		t.Errorf("turn/start lacks %s:\n%s", want, sent)
	}
}

// Without OpenRequest.Questions, request_user_input is refused as before
// (-32601) and the host is asked nothing.
func TestQuestionNotAskedWithoutQuestions(t *testing.T) {
	req, _ := fakeRequest(t, "auto")
	h := &questionHost{answer: func(runtime.QuestionRequest) runtime.QuestionAnswer { return runtime.QuestionAnswer{Answered: true} }}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sess, err := New().Open(ctx, req, h)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	prompt(t, sess, "Ask me which colour.")
	h.qmu.Lock()
	defer h.qmu.Unlock()
	if len(h.asked) != 0 {
		t.Errorf("the host was asked %+v", h.asked)
	}
}
