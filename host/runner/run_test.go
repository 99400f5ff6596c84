package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avenor-go/avenor/host/plugins"
	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest/scripted"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// inProcess launches the scripted backend in process over real gRPC.
func inProcess(ctx context.Context) (*plugins.Launched, error) {
	c, err := plugin.ServeInProcess(ctx, plugin.Info{Name: "scripted", Version: "test"}, nil, scripted.New())
	if err != nil {
		return nil, err
	}
	b, _ := c.Backend("scripted")
	return &plugins.Launched{Client: c, Backend: b, Found: plugins.Found{Family: "scripted", Path: "in-process"}}, nil
}

type runFixture struct {
	opts   Options
	log    bytes.Buffer
	sleeps []time.Duration
	mu     sync.Mutex
}

func newFixture(t *testing.T, prompt string) *runFixture {
	f := &runFixture{}
	dir := t.TempDir()
	f.opts = Options{
		Backend: "scripted", Dir: dir, Prompt: prompt, RunID: "00000000000000aa", Events: &f.log,
		StateDir: filepath.Join(dir, "state"), SentinelPath: filepath.Join(dir, "run.done"), Launch: inProcess,
		CancelBudget: 500 * time.Millisecond,
		Jitter:       func(d time.Duration) time.Duration { return d },
		Sleep: func(ctx context.Context, d time.Duration) error {
			f.mu.Lock()
			f.sleeps = append(f.sleeps, d)
			f.mu.Unlock()
			return ctx.Err()
		},
	}
	return f
}

func (f *runFixture) events(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(f.log.Bytes()), []byte("\n")) {
		var ev map[string]any
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("bad line %q: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

func (f *runFixture) types(t *testing.T) []string {
	var out []string
	for _, ev := range f.events(t) {
		out = append(out, ev["event"].(string))
	}
	return out
}

func sentinelText(t *testing.T, f *runFixture) string {
	data, err := os.ReadFile(f.opts.SentinelPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestRunStopReasons(t *testing.T) {
	for _, c := range []struct {
		name, prompt string
		stop         sdk.StopReason
		exit         int
		sentinelHead string
	}{
		{"end_turn", "say hi", "end_turn", 0, "DONE\n"},
		{"max_tokens", "stop max_tokens", "max_tokens", 3, "FAILED\n"},
		{"refusal", "stop refusal", "refusal", 2, "FAILED\n"},
		{"runtime failure", "fail broken", "error", 1, "FAILED\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, c.prompt)
			res := New(f.opts, nil).Run(context.Background())
			if res.ExitCode != c.exit || res.StopReason != c.stop {
				t.Fatalf("result %+v, want exit %d stop %s", res, c.exit, c.stop)
			}
			types := f.types(t)
			if types[0] != "session.start" || types[len(types)-1] != "session.end" {
				t.Fatalf("events %v: session.start must open and session.end close", types)
			}
			if s := sentinelText(t, f); !strings.HasPrefix(s, c.sentinelHead) || !strings.Contains(s, "STOP_REASON="+c.stop.String()+"\n") {
				t.Fatalf("sentinel %q", s)
			}
		})
	}
}

func TestRetryResumesTheSessionWithBackoff(t *testing.T) {
	f := newFixture(t, "announce\nfail boom")
	f.opts.MaxRetries = 2
	f.opts.Sleep = func(ctx context.Context, d time.Duration) error {
		f.mu.Lock()
		f.sleeps = append(f.sleeps, d)
		f.mu.Unlock()
		return nil
	}
	res := New(f.opts, nil).Run(context.Background())
	if res.ExitCode != 1 {
		t.Fatalf("result %+v", res)
	}
	if want := []time.Duration{2 * time.Second, 4 * time.Second}; len(f.sleeps) != 2 || f.sleeps[0] != want[0] || f.sleeps[1] != want[1] {
		t.Fatalf("backoffs %v, want %v", f.sleeps, want)
	}
	var sessions []string
	var retries []float64
	var turns []string
	for _, ev := range f.events(t) {
		switch ev["event"] {
		case "session.start":
			sessions = append(sessions, ev["session_id"].(string))
		case "avenor.retry":
			retries = append(retries, ev["attempt"].(float64))
			if ev["max_retries"].(float64) != 2 {
				t.Fatalf("retry event %v", ev)
			}
		case "agent.message_chunk":
			turns = append(turns, ev["content"].(map[string]any)["text"].(string))
		}
	}
	if len(sessions) != 3 || sessions[0] != sessions[1] || sessions[1] != sessions[2] {
		t.Fatalf("every attempt must resume the first session: %v", sessions)
	}
	if len(retries) != 2 || retries[0] != 2 || retries[1] != 3 {
		t.Fatalf("retry attempts %v, want [2 3]", retries)
	}
	if strings.Join(turns, ",") != "turn 1,turn 2,turn 3" {
		t.Fatalf("turns %v", turns)
	}
	if res.SessionID != sessions[0] {
		t.Fatalf("result session %q", res.SessionID)
	}
}

func TestNoRetryForTimeoutOrRefusal(t *testing.T) {
	f := newFixture(t, "stop refusal")
	f.opts.MaxRetries = 3
	New(f.opts, nil).Run(context.Background())
	if len(f.sleeps) != 0 {
		t.Fatalf("refusal (exit 2) must not be retried: %v", f.sleeps)
	}
}

func TestTimeouts(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*Options)
		stop sdk.StopReason
	}{
		{"timeout", func(o *Options) { o.Timeout = 200 * time.Millisecond }, "timeout"},
		{"progress", func(o *Options) { o.ProgressTimeout = 200 * time.Millisecond }, "progress_timeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, "say hi\nsleep 30s")
			c.set(&f.opts)
			start := time.Now()
			res := New(f.opts, nil).Run(context.Background())
			if res.ExitCode != 124 || res.StopReason != c.stop {
				t.Fatalf("result %+v", res)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("took %s", time.Since(start))
			}
			evs := f.events(t)
			last := evs[len(evs)-1]
			if last["event"] != "session.end" || last["stop_reason"] != string(c.stop) || last["final_output"] != "hi" {
				t.Fatalf("last event %v", last)
			}
		})
	}
}

func TestInterruptCancels(t *testing.T) {
	f := newFixture(t, "sleep 30s")
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(200*time.Millisecond, func() { cancel(ErrInterrupted) })
	res := New(f.opts, nil).Run(ctx)
	if res.ExitCode != 130 || res.StopReason != "cancelled" {
		t.Fatalf("result %+v", res)
	}
	if s := sentinelText(t, f); !strings.HasPrefix(s, "KILLED\n") || !strings.Contains(s, "EXIT_CODE=130\n") {
		t.Fatalf("sentinel %q", s)
	}
}

func TestPluginIgnoringCancelIsKilled(t *testing.T) {
	f := newFixture(t, "ignore-cancel\nsleep 30s")
	f.opts.Timeout = 100 * time.Millisecond
	res := New(f.opts, nil).Run(context.Background())
	if res.ExitCode != 124 {
		t.Fatalf("result %+v", res)
	}
	var sources []string
	for _, ev := range f.events(t) {
		if ev["event"] == "avenor.error" {
			sources = append(sources, ev["source"].(string))
		}
	}
	if len(sources) != 1 || sources[0] != "cancel" {
		t.Fatalf("avenor.error sources %v, want [cancel]", sources)
	}
}

func TestLaunchFailureStillEndsTheSession(t *testing.T) {
	f := newFixture(t, "say hi")
	f.opts.Launch = func(context.Context) (*plugins.Launched, error) { return nil, errors.New("no such plugin") }
	res := New(f.opts, nil).Run(context.Background())
	if res.ExitCode != 1 {
		t.Fatalf("result %+v", res)
	}
	if got := strings.Join(f.types(t), ","); got != "avenor.error,agent.status,session.end" {
		t.Fatalf("events %s", got)
	}
}

func TestCheckThinking(t *testing.T) {
	info := sdk.BackendInfo{Name: "scripted", ThinkingLevels: []string{"low", "high"}}
	none := sdk.BackendInfo{Name: "echo"}
	for _, c := range []struct {
		info  sdk.BackendInfo
		level string
		want  string
	}{
		{info, "", ""},
		{info, "low", ""},
		{info, "max", `backend "scripted" does not support thinking level "max"; accepted: low, high`},
		{none, "low", `backend "echo" does not support parameter "thinking"`},
		{info, "bogus", `invalid thinking level "bogus"; valid levels: off, minimal, low, medium, high, xhigh, max`},
	} {
		err := CheckThinking(c.info, c.level)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("CheckThinking(%s, %q) = %q, want %q", c.info.Name, c.level, got, c.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{1: 2 * time.Second, 2: 4 * time.Second, 3: 8 * time.Second, 4: 16 * time.Second, 5: 30 * time.Second, 9: 30 * time.Second} {
		if got := Backoff(n); got != want {
			t.Errorf("Backoff(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestStatusSynthesisPrecedesItsEvent(t *testing.T) {
	f := newFixture(t, "think hmm\ntool \"go test ./...\" kind=bash\nsay \"[status: working | reviewing]\"\npermission tool=bash question=\"Run it?\"")
	f.opts.AutoApprove = true
	res := New(f.opts, nil).Run(context.Background())
	if res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	var got []string
	for _, ev := range f.events(t) {
		s := ev["event"].(string)
		if s == "agent.status" {
			s += "(" + ev["phase"].(string) + "," + ev["source"].(string)
			if l, ok := ev["label"].(string); ok {
				s += "," + l
			}
			s += ")"
		}
		got = append(got, s)
	}
	want := []string{
		"session.start", "avenor.turn.start",
		"agent.status(thinking,avenor)", "agent.thought_chunk",
		"agent.status(working,avenor,go test ./...)", "tool.call", "tool.call_update",
		"agent.status(working,agent,reviewing)", "agent.message_chunk",
		"agent.status(waiting,avenor,Run it?)", "permission.request",
		"agent.status(working,avenor,reviewing)", "permission.response",
		"agent.message_chunk",
		"agent.status(done,avenor)", "session.end",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestQueuedPromptAndInterrupt(t *testing.T) {
	f := newFixture(t, "say one\nsleep 300ms")
	r := New(f.opts, nil)
	if err := r.Prompt("say two"); err != nil {
		t.Fatal(err)
	}
	res := r.Run(context.Background())
	if res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	evs := f.events(t)
	if last := evs[len(evs)-1]; last["final_output"] != "two" {
		t.Fatalf("the queued prompt must run as turn 2 after a clean turn: %v", last)
	}
	// Each turn ends with its own session.end (docs/run.md#multi-turn), turn 1's output kept.
	if got := sessionEnds(evs); strings.Join(got, ",") != "end_turn:one,end_turn:two" {
		t.Fatalf("session.end per turn: got %v, want [end_turn:one end_turn:two]", got)
	}
	if err := r.Prompt("late"); !errors.Is(err, ErrRunEnded) {
		t.Fatalf("prompt after the run: %v", err)
	}

	f = newFixture(t, "say one\nsleep 30s")
	r = New(f.opts, nil)
	_ = r.Prompt("say dropped")
	go func() {
		for r.Status().TurnState != TurnRunning {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
		_ = r.InterruptAndPrompt("say interrupted", false)
	}()
	res = r.Run(context.Background())
	evs = f.events(t)
	if last := evs[len(evs)-1]; res.ExitCode != 0 || last["final_output"] != "interrupted" {
		t.Fatalf("result %+v last %v", res, last)
	}
	turns := 0
	for _, ev := range evs {
		if ev["event"] == "avenor.turn.start" {
			turns++
		}
	}
	if turns != 2 {
		t.Fatalf("turns %d, want 2 (interrupt dropped the queue)", turns)
	}
	if got := sessionEnds(evs); len(got) != 2 || !strings.HasPrefix(got[0], "cancelled:") || got[1] != "end_turn:interrupted" {
		t.Fatalf("session.end per turn: got %v, want [cancelled:… end_turn:interrupted]", got)
	}
}

// sessionEnds lists each session.end of evs as "stop_reason:final_output".
func sessionEnds(evs []map[string]any) []string {
	var out []string
	for _, ev := range evs {
		if ev["event"] == "session.end" {
			final, _ := ev["final_output"].(string)
			out = append(out, fmt.Sprintf("%v:%s", ev["stop_reason"], final))
		}
	}
	return out
}

func TestParseStatusMarkers(t *testing.T) {
	for _, c := range []struct {
		text string
		want []StatusMarker
	}{
		{"plain", nil},
		{"[status: working | go test]", []StatusMarker{{"working", "go test"}}},
		{"x [STATUS: Thinking] y", []StatusMarker{{"thinking", ""}}},
		{"<|status: waiting | review|>", []StatusMarker{{"waiting", "review"}}},
		{"inline <|status: waiting | review|> is not a line", nil},
		{"[status: sleeping | z]", nil},
		{"[status: done]\n<|status: working | b|>", []StatusMarker{{"done", ""}, {"working", "b"}}},
	} {
		got := ParseStatusMarkers(c.text)
		if len(got) != len(c.want) {
			t.Errorf("%q: got %v, want %v", c.text, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%q: got %v, want %v", c.text, got, c.want)
			}
		}
	}
}

func FuzzParseStatusMarkers(f *testing.F) {
	f.Add("[status: working | x]")
	f.Add("<|status: done|>")
	f.Fuzz(func(t *testing.T, s string) {
		for _, m := range ParseStatusMarkers(s) {
			switch m.Phase {
			case PhaseThinking, PhaseWorking, PhaseWaiting, PhaseDone:
			default:
				t.Fatalf("unknown phase %q from %q", m.Phase, s)
			}
		}
	})
}

// TestNoRetryWhenTheRuntimeIsNotReady: a session that fails to open because
// the runtime is unusable here (Check says so: a missing CLI, missing
// credentials) is not retried, and the user is told why.
func TestNoRetryWhenTheRuntimeIsNotReady(t *testing.T) {
	f := newFixture(t, "say hi")
	f.opts.MaxRetries = 3
	f.opts.PluginOptions = map[string]any{"fail_open": "runtime CLI \"x\" not found", "not_ready": "install x with: npm i -g x"}
	var stderr bytes.Buffer
	f.opts.Stderr = &stderr
	res := New(f.opts, nil).Run(context.Background())
	if res.ExitCode != 1 || len(f.sleeps) != 0 {
		t.Fatalf("result %+v after %d backoffs; want exit 1 and no retry", res, len(f.sleeps))
	}
	if !strings.Contains(stderr.String(), "install x with: npm i -g x") || !strings.Contains(stderr.String(), "not retrying") {
		t.Errorf("stderr does not give the fix: %q", stderr.String())
	}
	// A runtime fault while the runtime is ready is retried as before.
	f = newFixture(t, "say hi")
	f.opts.MaxRetries = 1
	f.opts.PluginOptions = map[string]any{"fail_open": "flaky"}
	if res := New(f.opts, nil).Run(context.Background()); res.ExitCode != 1 || len(f.sleeps) != 1 {
		t.Errorf("a transient open failure: %+v after %d backoffs, want one retry", res, len(f.sleeps))
	}
}

func TestBackoffJitter(t *testing.T) {
	var o Options
	o.defaults()
	seen := map[time.Duration]bool{}
	for i := 0; i < 50; i++ {
		d := o.Jitter(2 * time.Second)
		if d < 2*time.Second || d > 2*time.Second+time.Duration(BackoffJitter*float64(2*time.Second)) {
			t.Fatalf("jittered 2s = %v, outside [2s, 2.4s]", d)
		}
		seen[d] = true
	}
	if len(seen) < 2 {
		t.Errorf("50 jittered backoffs are all %v: no jitter", seen)
	}
}
