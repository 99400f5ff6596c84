package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/plugins"
	hostrt "github.com/avenor-go/avenor/host/runner"
	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest/scripted"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// scriptedBinary is the avenor-plugin-scripted binary: AVENOR_TEST_BIN's
// (make build) when it has one, else built for this test.
func scriptedBinary(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("AVENOR_TEST_BIN"); dir != "" {
		if p := filepath.Join(dir, "avenor-plugin-scripted"); fileExists(p) {
			return p
		}
	}
	bin := filepath.Join(t.TempDir(), "avenor-plugin-scripted")
	cmd := exec.Command("go", "build", "-o", bin, "./plugintest/scripted/cmd/avenor-plugin-scripted")
	cmd.Dir = filepath.Join("..", "..", "sdk")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build avenor-plugin-scripted: %v\n%s", err, out)
	}
	return bin
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// launches records the plugins a run launched.
type launches struct {
	mu  sync.Mutex
	all []*plugins.Launched
}

func (ls *launches) add(l *plugins.Launched) {
	ls.mu.Lock()
	ls.all = append(ls.all, l)
	ls.mu.Unlock()
}

func (ls *launches) list() []*plugins.Launched {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return append([]*plugins.Launched(nil), ls.all...)
}

// binaryLaunch launches bin, a plugin process of its own each time.
func (ls *launches) binaryLaunch(bin string) func(context.Context) (*plugins.Launched, error) {
	return func(ctx context.Context) (*plugins.Launched, error) {
		l, err := plugins.Launch(ctx, plugins.Found{Family: "scripted", Path: bin}, "scripted", nil)
		if err == nil {
			ls.add(l)
		}
		return l, err
	}
}

// inProcessLaunch launches backend in process.
func (ls *launches) inProcessLaunch(backend func() sdk.Backend) func(context.Context) (*plugins.Launched, error) {
	return func(ctx context.Context) (*plugins.Launched, error) {
		c, err := plugin.ServeInProcess(ctx, plugin.Info{Name: "scripted", Version: "test"}, nil, backend())
		if err != nil {
			return nil, err
		}
		b, _ := c.Backend("scripted")
		l := &plugins.Launched{Client: c, Backend: b, Found: plugins.Found{Family: "scripted", Path: "in-process"}}
		ls.add(l)
		return l, nil
	}
}

// syncBuffer is an event log the test reads while the run writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.b.Bytes()...)
}

func decodeLog(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var ev map[string]any
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("bad line %q: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

// waitTurn waits until the runtime's turn runs in a session it knows.
func waitTurn(t *testing.T, rt *Runtime) control.Status {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st := rt.Snapshot()
		if st.TurnState == control.TurnRunning && st.SessionID != "" {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn never ran: %+v", st)
		}
	}
}

// TestRestartResumesTheSessionInAFreshProcess: the run of `avenor run`,
// restarted mid-turn, goes on in a new plugin process on the same session;
// a subscriber and the log see one stream — the stopped turn without a
// session.end, avenor.restarted, the fresh turn's session.start — and the
// sentinel is written once, by the last turn.
func TestRestartResumesTheSessionInAFreshProcess(t *testing.T) {
	var ls launches
	spec := scriptedSpec(t, "say before\nsleep 60s")
	log := &syncBuffer{}
	spec.Options.Events = log
	spec.Options.MaxRetries = 2
	spec.Options.SentinelPath = filepath.Join(spec.Options.Dir, "run.done")
	spec.Options.Launch = ls.binaryLaunch(scriptedBinary(t))
	rt, err := New(spec, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	sub := rt.Events().Subscribe(1024)
	var seen []event.Event
	subDone := make(chan struct{})
	go func() {
		defer close(subDone)
		for ev := range sub.C() {
			seen = append(seen, ev)
		}
	}()
	rt.Start(context.Background())
	st := waitTurn(t, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := rt.Restart(ctx, RestartRequest{Note: "say after", Reason: "watchdog"}); err != nil {
		t.Fatalf("Restart = %v", err)
	}
	if _, err := os.Stat(spec.Options.SentinelPath); !os.IsNotExist(err) {
		t.Fatalf("the stopped turn wrote the sentinel (stat: %v)", err)
	}
	res := rt.Wait()
	if res.ExitCode != 0 || res.SessionID != st.SessionID {
		t.Fatalf("result %+v, want exit 0 on session %s", res, st.SessionID)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	sub.Close()
	<-subDone

	ps := ls.list()
	if len(ps) != 2 || ps[0].Client.PID() <= 0 || ps[0].Client.PID() == ps[1].Client.PID() {
		t.Fatalf("launched %d plugins, want 2 processes with different pids", len(ps))
	}
	select {
	case <-ps[0].Client.Exited():
	default:
		t.Error("the restarted run's first plugin still runs")
	}

	evs := decodeLog(t, log.Bytes())
	if len(seen) != len(evs) {
		t.Errorf("the subscriber saw %d events, the log has %d", len(seen), len(evs))
	}
	var types []string
	var starts, ends, turns []any
	restarted := -1
	for i, ev := range evs {
		typ, _ := ev["event"].(string)
		types = append(types, typ)
		if ev["seq"] != float64(i+1) {
			t.Fatalf("event %d has seq %v: the stream is not one", i+1, ev["seq"])
		}
		switch typ {
		case "session.start":
			starts = append(starts, ev["session_id"])
		case "session.end":
			ends = append(ends, ev["stop_reason"])
		case "avenor.turn.start":
			turns = append(turns, ev["turn"])
		case "avenor.retry":
			t.Error("a restart was taken for a retry")
		case "avenor.restarted":
			restarted = i
			if ev["session_id"] != st.SessionID || ev["reason"] != "watchdog" || ev["attempt"] != float64(1) {
				t.Errorf("restarted event %v", ev)
			}
		}
	}
	if len(starts) != 2 || starts[0] != st.SessionID || starts[1] != st.SessionID {
		t.Errorf("session.start sessions %v, want %s twice", starts, st.SessionID)
	}
	if len(ends) != 1 || ends[0] != "end_turn" || types[len(types)-1] != "session.end" {
		t.Errorf("session.end stop reasons %v in %v: want only the fresh turn's end_turn, last", ends, types)
	}
	if restarted < 0 || !strings.Contains(strings.Join(types[:restarted], ","), "agent.message_chunk") || types[restarted+1] != "session.start" {
		t.Errorf("avenor.restarted must follow the stopped turn and precede the fresh session.start: %v", types)
	}
	if len(turns) != 2 || turns[0] != float64(1) || turns[1] != float64(2) {
		t.Errorf("turn numbers %v, want 1 then 2", turns)
	}
	data, err := os.ReadFile(spec.Options.SentinelPath)
	if err != nil || !strings.HasPrefix(string(data), "DONE\n") || !strings.Contains(string(data), st.SessionID) {
		t.Errorf("sentinel %q (%v), want the fresh turn's DONE", data, err)
	}
}

// TestRestartTakesTheChangedSpec: a stable runtime restarted with a
// changed spec runs the fresh process with it (its Launch, its model), in
// its own log, and keeps it for its later runs.
func TestRestartTakesTheChangedSpec(t *testing.T) {
	var first, second launches
	spec := scriptedSpec(t, "")
	spec.RuntimeID = "rt_5"
	spec.EventLog = filepath.Join(t.TempDir(), "ev.ndjson")
	spec.Options.Launch = first.inProcessLaunch(scripted.New)
	rt, err := New(spec, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	run := rt.Begin(Turn{Prompt: "sleep 60s"})
	done := make(chan hostrt.Result, 1)
	go func() { done <- run(context.Background()) }()
	st := waitTurn(t, rt)

	changed := rt.Spec()
	changed.Options.Model = "widened"
	changed.Options.Launch = second.inProcessLaunch(scripted.New)
	if err := rt.Restart(context.Background(), RestartRequest{Spec: &changed, Note: "say after", Reason: "sandbox_widened"}); err != nil {
		t.Fatalf("Restart = %v", err)
	}
	var res hostrt.Result
	select {
	case res = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the restarted run did not end")
	}
	if res.ExitCode != 0 || res.SessionID != st.SessionID || res.Restarted {
		t.Fatalf("result %+v", res)
	}
	if len(first.list()) != 1 || len(second.list()) != 1 {
		t.Fatalf("launches: %d by the first spec, %d by the changed one; want 1 each", len(first.list()), len(second.list()))
	}
	if got := rt.Spec().Options.Model; got != "widened" {
		t.Errorf("the runtime's spec after the restart has model %q", got)
	}
	if err := rt.Park(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(spec.EventLog)
	var models []any
	restarts := 0
	for _, ev := range decodeLog(t, data) {
		if ev["runtime_id"] != "rt_5" {
			t.Errorf("event without the runtime id: %v", ev)
		}
		switch ev["event"] {
		case "session.start":
			models = append(models, ev["model"])
		case "avenor.restarted":
			restarts++
			if ev["reason"] != "sandbox_widened" || ev["session_id"] != st.SessionID {
				t.Errorf("restarted event %v", ev)
			}
		}
	}
	if restarts != 1 || len(models) != 2 || models[0] != nil || models[1] != "widened" {
		t.Errorf("%d restarts, session.start models %v: want the fresh one on the changed spec", restarts, models)
	}
}

// TestRestartRefused: a restart that cannot resume the session, or comes
// when no turn can be restarted, is refused with why, and the run goes on
// (or ends) as it would have.
func TestRestartRefused(t *testing.T) {
	ctx := context.Background()
	valid := RestartRequest{Note: "go on", Reason: strings.Repeat("r", MaxRestartReason)}

	t.Run("bad request", func(t *testing.T) {
		rt, err := New(scriptedSpec(t, "say hi"), Deps{})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		for _, c := range []struct {
			req  RestartRequest
			want string
		}{
			{RestartRequest{Reason: "watchdog"}, "needs a note"},
			{RestartRequest{Note: "a\xffb", Reason: "watchdog"}, "not valid UTF-8"},
			{RestartRequest{Note: "go on"}, "reason must be a token of 1 to 64 bytes"},
			{RestartRequest{Note: "go on", Reason: strings.Repeat("r", MaxRestartReason+1)}, "reason must be a token"},
			{RestartRequest{Note: "go on", Reason: "Watch Dog"}, "may hold only"},
			// Valid, at the reason's bound: refused only for want of a run.
			{valid, "no run is under way"},
		} {
			err := rt.Restart(ctx, c.req)
			if !errors.Is(err, ErrRestartRefused) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Restart(%+v) = %v, want a refusal saying %q", c.req, err, c.want)
			}
		}
	})

	// running starts a run of spec (prompt "sleep 60s" unless set) and
	// waits for its turn.
	running := func(t *testing.T, spec Spec) *Runtime {
		rt, err := New(spec, Deps{})
		if err != nil {
			t.Fatal(err)
		}
		rt.Start(ctx)
		waitTurn(t, rt)
		return rt
	}
	endRun := func(t *testing.T, rt *Runtime) Result {
		rt.Cancel()
		res := rt.Wait()
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
		return res
	}

	t.Run("in-process resume", func(t *testing.T) {
		var ls launches
		spec := scriptedSpec(t, "sleep 60s")
		spec.Options.Launch = ls.inProcessLaunch(scripted.NewInProcess)
		rt := running(t, spec)
		err := rt.Restart(ctx, valid)
		if !errors.Is(err, ErrNoResume) || !errors.Is(err, ErrRestartRefused) || !strings.Contains(err.Error(), "resume scope in_process") {
			t.Errorf("Restart = %v, want ErrNoResume naming the resume scope", err)
		}
		if st := rt.Snapshot(); st.TurnState != control.TurnRunning || len(ls.list()) != 1 {
			t.Errorf("a refused restart stopped the turn: %+v", st)
		}
		if res := endRun(t, rt); res.ExitCode != 130 {
			t.Errorf("result %+v", res)
		}
	})

	t.Run("changed identity", func(t *testing.T) {
		rt := running(t, scriptedSpec(t, "sleep 60s"))
		for _, c := range []struct {
			change func(*Spec)
			want   string
		}{
			{func(s *Spec) { s.Options.Backend = "echo" }, "its backend cannot change"},
			{func(s *Spec) { s.Options.Dir = t.TempDir() }, "its dir cannot change"},
			{func(s *Spec) { s.RuntimeID = "rt_9" }, "its runtime id cannot change"},
			{func(s *Spec) { s.Phased = &Phased{} }, "loop or team"},
			{func(s *Spec) { s.Options.Launch = nil }, "no Launch"},
		} {
			s := rt.Spec()
			c.change(&s)
			req := valid
			req.Spec = &s
			if err := rt.Restart(ctx, req); !errors.Is(err, ErrRestartRefused) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Restart = %v, want a refusal saying %q", err, c.want)
			}
		}
		if res := endRun(t, rt); res.ExitCode != 130 {
			t.Errorf("result %+v", res)
		}
	})

	t.Run("no session yet", func(t *testing.T) {
		spec := scriptedSpec(t, "say hi")
		gate := make(chan struct{})
		spec.Options.Launch = func(ctx context.Context) (*plugins.Launched, error) {
			select {
			case <-gate:
			case <-ctx.Done():
			}
			return inProcess(ctx)
		}
		rt, err := New(spec, Deps{})
		if err != nil {
			t.Fatal(err)
		}
		rt.Start(ctx)
		for started := false; !started; time.Sleep(time.Millisecond) {
			rt.mu.Lock()
			started = rt.restart.running
			rt.mu.Unlock()
		}
		if err := rt.Restart(ctx, valid); !errors.Is(err, ErrRestartRefused) || !strings.Contains(err.Error(), "no session is open yet") {
			t.Errorf("Restart = %v, want a refusal: no session yet", err)
		}
		close(gate)
		if res := rt.Wait(); res.ExitCode != 0 {
			t.Errorf("result %+v", res)
		}
		if err := rt.Restart(ctx, valid); !errors.Is(err, ErrRestartRefused) || !strings.Contains(err.Error(), "no run is under way") {
			t.Errorf("Restart after the run = %v, want a refusal: no run", err)
		}
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})

	t.Run("ending", func(t *testing.T) {
		// The turn ignores the cancel: the run is ending for the cancel
		// budget.
		rt := running(t, scriptedSpec(t, "ignore-cancel\nsleep 60s"))
		rt.Cancel()
		if err := rt.Restart(ctx, valid); !errors.Is(err, ErrRestartRefused) || !errors.Is(err, hostrt.ErrStopping) {
			t.Errorf("Restart of an ending run = %v, want a refusal: stopping", err)
		}
		if res := endRun(t, rt); res.ExitCode != 130 {
			t.Errorf("result %+v", res)
		}
	})

	t.Run("too many restarts", func(t *testing.T) {
		rt := running(t, scriptedSpec(t, "sleep 60s"))
		rt.mu.Lock()
		rt.restart.count = MaxRestarts
		rt.mu.Unlock()
		if err := rt.Restart(ctx, valid); !errors.Is(err, ErrRestartRefused) || !strings.Contains(err.Error(), "restarted 100 times") {
			t.Errorf("Restart = %v, want a refusal: too many", err)
		}
		if res := endRun(t, rt); res.ExitCode != 130 {
			t.Errorf("result %+v", res)
		}
	})
}

// TestStopReachesARestartingRun: a cancel or a kill that comes while a
// restart stops the old process — the old runner stopping, the fresh one
// not begun — ends the run all the same, with its sentinel: no fresh turn
// goes on after it.
func TestStopReachesARestartingRun(t *testing.T) {
	for _, c := range []struct {
		name string
		stop func(*Runtime)
	}{
		{"cancel", (*Runtime).Cancel},
		{"kill", (*Runtime).Kill},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The turn ignores the cancel: the restart takes the cancel
			// budget.
			spec := scriptedSpec(t, "ignore-cancel\nsleep 60s")
			spec.Options.SentinelPath = filepath.Join(spec.Options.Dir, "run.done")
			// A budget long enough that a poller on a loaded machine sees
			// the cancelling window.
			spec.Options.CancelBudget = 5 * time.Second
			rt, err := New(spec, Deps{})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			rt.Start(context.Background())
			waitTurn(t, rt)
			restarted := make(chan error, 1)
			go func() {
				restarted <- rt.Restart(context.Background(), RestartRequest{Note: "sleep 60s", Reason: "watchdog"})
			}()
			for deadline := time.Now().Add(20 * time.Second); rt.Snapshot().TurnState != control.TurnCancelling; time.Sleep(5 * time.Millisecond) {
				select {
				case err := <-restarted:
					rt.Cancel()
					t.Fatalf("Restart returned %v before the old turn was seen cancelling", err)
				default:
				}
				if time.Now().After(deadline) {
					rt.Cancel()
					t.Fatalf("the restart never began stopping the turn: %+v", rt.Snapshot())
				}
			}
			c.stop(rt)
			ended := make(chan Result, 1)
			go func() { ended <- rt.Wait() }()
			select {
			case res := <-ended:
				if res.ExitCode != 130 {
					t.Fatalf("result %+v, want cancelled (130)", res)
				}
			case <-time.After(20 * time.Second):
				rt.Cancel()
				<-ended
				t.Fatal("the stop during the restart was lost: the fresh turn went on")
			}
			if err := <-restarted; err != nil {
				t.Errorf("Restart = %v", err)
			}
			data, err := os.ReadFile(spec.Options.SentinelPath)
			if err != nil || !strings.Contains(string(data), "STOP_REASON=cancelled") {
				t.Errorf("sentinel %q (%v)", data, err)
			}
		})
	}
}

// TestRestartKeepsTheRunClock: the fresh turn gets what is left of the
// run's --timeout, not a clock of its own.
func TestRestartKeepsTheRunClock(t *testing.T) {
	const timeout = 2 * time.Second
	spec := scriptedSpec(t, "sleep 60s")
	spec.Options.Timeout = timeout
	rt, err := New(spec, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	start := time.Now()
	rt.Start(context.Background())
	waitTurn(t, rt)
	time.Sleep(time.Second - time.Since(start))
	if err := rt.Restart(context.Background(), RestartRequest{Note: "sleep 60s", Reason: "watchdog"}); err != nil {
		t.Fatalf("Restart = %v", err)
	}
	res := rt.Wait()
	// A clock started afresh would end the run a whole timeout after the
	// restart, at 3 s or later.
	if took := time.Since(start); res.ExitCode != 124 || took > timeout+900*time.Millisecond {
		t.Fatalf("result %+v after %v, want a timeout (124) at about %v", res, took, timeout)
	}
}

// TestRestartKeepsQueuedPrompts: prompts queued behind the stopped turn
// run after the fresh turn, in order, in the fresh process.
func TestRestartKeepsQueuedPrompts(t *testing.T) {
	spec := scriptedSpec(t, "sleep 60s")
	log := &syncBuffer{}
	spec.Options.Events = log
	rt, err := New(spec, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	rt.Start(context.Background())
	waitTurn(t, rt)
	for _, p := range []string{"say one", "say two"} {
		if err := rt.Prompt(context.Background(), p, false, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.Restart(context.Background(), RestartRequest{Note: "say after", Reason: "watchdog"}); err != nil {
		t.Fatalf("Restart = %v", err)
	}
	if res := rt.Wait(); res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	var said []string
	for _, ev := range decodeLog(t, log.Bytes()) {
		if ev["event"] == "agent.message_chunk" {
			c, _ := ev["content"].(map[string]any)
			s, _ := c["text"].(string)
			said = append(said, s)
		}
	}
	if got := strings.Join(said, ","); got != "after,one,two" {
		t.Errorf("the fresh process said %q, want after,one,two", got)
	}
}
