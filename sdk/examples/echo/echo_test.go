package echo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/avenor-go/avenor/sdk/examples/echo"
	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testHost records what the session emits and answers permissions with
// answer (nil: never answer, wait for the turn to end).
type testHost struct {
	answer func(runtime.PermissionRequest) runtime.PermissionDecision

	mu     sync.Mutex
	events []runtime.Event
	asked  []runtime.PermissionRequest
}

func (h *testHost) Emit(ev runtime.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev)
}

func (h *testHost) AskPermission(ctx context.Context, req runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	h.mu.Lock()
	h.asked = append(h.asked, req)
	h.mu.Unlock()
	if h.answer == nil {
		<-ctx.Done()
		return runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}, ctx.Err()
	}
	return h.answer(req), nil
}

func (h *testHost) Logger() hclog.Logger { return hclog.NewNullLogger() }

func (h *testHost) snapshot() []runtime.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]runtime.Event(nil), h.events...)
}

func (h *testHost) types() []runtime.EventType {
	var out []runtime.EventType
	for _, ev := range h.snapshot() {
		out = append(out, ev.Type)
	}
	return out
}

// text concatenates the text of every event of type typ.
func (h *testHost) text(typ runtime.EventType) string {
	var b strings.Builder
	for _, ev := range h.snapshot() {
		if ev.Type == typ {
			c, _ := ev.Fields["content"].(map[string]any)
			s, _ := c["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// waitFor polls until cond holds for the recorded events.
func (h *testHost) waitFor(t *testing.T, what string, cond func([]runtime.Event) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond(h.snapshot()) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; events: %v", what, h.types())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// serve serves echo in process over real gRPC and returns its backend.
func serve(t *testing.T) runtime.Backend {
	t.Helper()
	c, err := plugin.ServeInProcess(context.Background(), plugin.Info{Name: "echo", Version: echo.Version}, nil, echo.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	if got := c.Info(); got.Name != "echo" || got.Version != echo.Version {
		t.Fatalf("plugin info = %+v", got)
	}
	b, ok := c.Backend(echo.Name)
	if !ok {
		t.Fatalf("plugin does not serve %q", echo.Name)
	}
	return b
}

type fixture struct {
	sess runtime.Session
	host *testHost
	dir  string
}

func open(t *testing.T, b runtime.Backend, stateDir, resume string, host *testHost) fixture {
	t.Helper()
	dir := t.TempDir()
	sess, err := b.Open(context.Background(), runtime.OpenRequest{
		Backend: echo.Name, Dir: dir, StateDir: stateDir, ResumeSessionID: resume,
	}, host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close(context.Background()) })
	return fixture{sess: sess, host: host, dir: dir}
}

func (f fixture) prompt(t *testing.T, text string) runtime.TurnResult {
	t.Helper()
	res, err := f.sess.Prompt(context.Background(), runtime.Turn{ID: "t-" + text, Text: text})
	if err != nil {
		t.Fatalf("prompt %q: %v", text, err)
	}
	return res
}

// promptAsync is prompt for a goroutine: errors become StopReason "error".
func (f fixture) promptAsync(text string) runtime.TurnResult {
	res, err := f.sess.Prompt(context.Background(), runtime.Turn{ID: "t-async", Text: text})
	if err != nil {
		return runtime.TurnResult{StopReason: runtime.StopReason("error: " + err.Error())}
	}
	return res
}

func TestInfoAndCheckCrossTheWire(t *testing.T) {
	b := serve(t)
	if want := echo.New().Info(); !reflect.DeepEqual(b.Info(), want) {
		t.Errorf("Info over gRPC = %+v\nwant %+v", b.Info(), want)
	}
	info := b.Info()
	if info.Capability(runtime.CapResume) != runtime.Supported || info.ResumeScope != runtime.ResumeCrossProcess {
		t.Errorf("resume = %s/%s", info.Capability(runtime.CapResume), info.ResumeScope)
	}
	if info.Capability(runtime.CapModelSelection) != runtime.Unsupported || len(info.ThinkingLevels) != 0 {
		t.Errorf("model selection or thinking levels advertised: %+v", info)
	}
	if r := b.Check(context.Background(), runtime.CheckRequest{Backend: echo.Name}); !r.Ready {
		t.Errorf("Check = %+v, want ready", r)
	}
}

func TestPromptStreamsThoughtsToolAndEcho(t *testing.T) {
	f := open(t, serve(t), t.TempDir(), "", &testHost{})
	res := f.prompt(t, "hello world")

	const want = "echo (turn 1): hello world"
	if res.StopReason != runtime.StopEndTurn || res.FinalOutput != want || !res.HasFinalOutput {
		t.Errorf("result = %+v", res)
	}
	if u := res.Usage; u == nil || *u != (runtime.Usage{InputTokens: 11, OutputTokens: int64(len(want)), TotalTokens: 11 + int64(len(want))}) {
		t.Errorf("usage = %+v", u)
	}
	if got := f.host.text(runtime.EventMessageChunk); got != want {
		t.Errorf("message text = %q, want %q", got, want)
	}
	wantTypes := []runtime.EventType{
		runtime.EventThoughtChunk, runtime.EventThoughtChunk,
		runtime.EventToolCall, runtime.EventToolCallUpdate,
		runtime.EventMessageChunk, runtime.EventMessageChunk, runtime.EventMessageChunk, runtime.EventMessageChunk, runtime.EventMessageChunk,
	}
	if got := f.host.types(); !reflect.DeepEqual(got, wantTypes) {
		t.Errorf("event types = %v\nwant %v", got, wantTypes)
	}
	evs := f.host.snapshot()
	call, update := evs[2].Fields, evs[3].Fields
	if call["toolCallId"] != update["toolCallId"] || call["kind"] != "read" || call["status"] != "pending" || update["status"] != "completed" {
		t.Errorf("tool call = %v, update = %v", call, update)
	}
	if evs[4].Fields["session_id"] != f.sess.ID() {
		t.Errorf("chunk session_id = %v, want %s", evs[4].Fields["session_id"], f.sess.ID())
	}

	if res := f.prompt(t, "again"); res.FinalOutput != "echo (turn 2): again" {
		t.Errorf("second turn = %q", res.FinalOutput)
	}
}

func TestPermission(t *testing.T) {
	choose := func(id, kind string) func(runtime.PermissionRequest) runtime.PermissionDecision {
		return func(runtime.PermissionRequest) runtime.PermissionDecision {
			return runtime.PermissionDecision{Outcome: runtime.OutcomeSelected, OptionID: id, Kind: kind}
		}
	}
	cases := []struct {
		name      string
		answer    func(runtime.PermissionRequest) runtime.PermissionDecision
		stop      runtime.StopReason
		says      string
		wroteFile bool
	}{
		{"allow once", choose("allow_once", runtime.KindAllowOnce), runtime.StopEndTurn, "I wrote reply.txt.", true},
		{"allow always", choose("allow_always", runtime.KindAllowAlways), runtime.StopEndTurn, "I wrote reply.txt.", true},
		{"reject", choose("reject", runtime.KindReject), runtime.StopEndTurn, "I did not write reply.txt", false},
		{"cancelled", func(runtime.PermissionRequest) runtime.PermissionDecision {
			return runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}
		}, runtime.StopCancelled, "", false},
	}
	b := serve(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := open(t, b, t.TempDir(), "", &testHost{answer: tc.answer})
			res := f.prompt(t, "ask permission please")
			if res.StopReason != tc.stop {
				t.Fatalf("stop reason = %q, want %q", res.StopReason, tc.stop)
			}
			if !strings.Contains(f.host.text(runtime.EventMessageChunk), tc.says) {
				t.Errorf("reply %q does not say %q", f.host.text(runtime.EventMessageChunk), tc.says)
			}
			data, err := os.ReadFile(filepath.Join(f.dir, "reply.txt"))
			if tc.wroteFile != (err == nil) {
				t.Errorf("reply.txt written = %v, want %v", err == nil, tc.wroteFile)
			}
			if tc.wroteFile && string(data) != "echo (turn 1): ask permission please\n" {
				t.Errorf("reply.txt = %q", data)
			}
			f.host.mu.Lock()
			asked := f.host.asked
			f.host.mu.Unlock()
			if len(asked) != 1 || asked[0].Tool != "echo" || asked[0].Question != "May echo write reply.txt?" || len(asked[0].Options) != 3 {
				t.Fatalf("permission requests = %+v", asked)
			}
			// The tool call the request belongs to is announced before it.
			if ev := f.host.snapshot()[0]; ev.Type != runtime.EventToolCall || ev.Fields["kind"] != "edit" {
				t.Errorf("first event = %+v, want the edit tool.call", ev)
			}
		})
	}
}

func TestCancelWhileWaitingForPermission(t *testing.T) {
	f := open(t, serve(t), t.TempDir(), "", &testHost{}) // never answers
	done := make(chan runtime.TurnResult, 1)
	go func() { done <- f.promptAsync("permission?") }()
	f.host.waitFor(t, "the permission request", func([]runtime.Event) bool {
		f.host.mu.Lock()
		defer f.host.mu.Unlock()
		return len(f.host.asked) == 1
	})
	if err := f.sess.Cancel(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.StopReason != runtime.StopCancelled {
			t.Errorf("stop reason = %q", res.StopReason)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Prompt did not return after Cancel")
	}
}

func TestCancelMidStream(t *testing.T) {
	f := open(t, serve(t), t.TempDir(), "", &testHost{})
	long := strings.Repeat("word ", 100)
	done := make(chan runtime.TurnResult, 1)
	go func() { done <- f.promptAsync(long) }()
	f.host.waitFor(t, "the first message chunk", func(evs []runtime.Event) bool {
		return len(evs) > 0 && evs[len(evs)-1].Type == runtime.EventMessageChunk
	})
	start := time.Now()
	if err := f.sess.Cancel(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.StopReason != runtime.StopCancelled {
			t.Errorf("stop reason = %q, want cancelled", res.StopReason)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("cancel took %v", took)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Prompt did not return after Cancel")
	}
	if got := f.host.text(runtime.EventMessageChunk); len(got) >= len(long) {
		t.Errorf("the whole reply was streamed despite Cancel: %d bytes", len(got))
	}
}

func TestResumeAcrossPluginProcesses(t *testing.T) {
	state := t.TempDir()
	first := open(t, serve(t), state, "", &testHost{})
	first.prompt(t, "one")
	id := first.sess.ID()
	if !strings.HasPrefix(id, "echo_") {
		t.Errorf("session id = %q", id)
	}

	// A second plugin "process" sharing only the state directory.
	second := open(t, serve(t), state, id, &testHost{})
	if second.sess.ID() != id {
		t.Errorf("resumed id = %q, want %q", second.sess.ID(), id)
	}
	if res := second.prompt(t, "two"); res.FinalOutput != "echo (turn 2): two" {
		t.Errorf("resumed turn = %q", res.FinalOutput)
	}
}

func TestStateDirIsCreatedPrivate(t *testing.T) {
	state := filepath.Join(t.TempDir(), "plugins", "echo")
	open(t, serve(t), state, "", &testHost{})
	fi, err := os.Stat(state)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode = %v, want 0700", fi.Mode().Perm())
	}
}

func TestResumeUnknownSessionIsTheUsersFault(t *testing.T) {
	_, err := serve(t).Open(context.Background(), runtime.OpenRequest{
		Backend: echo.Name, Dir: t.TempDir(), StateDir: t.TempDir(), ResumeSessionID: "echo_nope",
	}, &testHost{})
	var rerr *runtime.Error
	if !errors.As(err, &rerr) || rerr.Fault != runtime.FaultUser || !strings.Contains(rerr.Message, "not found") {
		t.Fatalf("Open = %v, want a user-fault 'not found' error", err)
	}
}
