package run

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/plugins"
	hostrt "github.com/avenor-go/avenor/host/runner"
	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest/scripted"
)

// inProcess launches the scripted backend in process over real gRPC.
func inProcess(ctx context.Context) (*plugins.Launched, error) {
	c, err := plugin.ServeInProcess(ctx, plugin.Info{Name: "scripted", Version: "test"}, nil, scripted.New())
	if err != nil {
		return nil, err
	}
	b, _ := c.Backend("scripted")
	return &plugins.Launched{Client: c, Backend: b, Found: plugins.Found{Family: "scripted", Path: "in-process"}}, nil
}

func scriptedSpec(t *testing.T, prompt string) Spec {
	dir := t.TempDir()
	return Spec{Options: hostrt.Options{
		Backend: "scripted", Dir: dir, Prompt: prompt, RunID: "00000000000000aa",
		StateDir: filepath.Join(dir, "state"), Launch: inProcess, CancelBudget: 500 * time.Millisecond,
	}}
}

// TestRuntimeIsATarget: the runtime is what the control method table
// serves — its snapshot, its id, and the final output of its last turn,
// learned from the runner's typed facts.
func TestRuntimeIsATarget(t *testing.T) {
	var _ control.Target = (*Runtime)(nil)
	var _ control.SourcedTarget = (*Runtime)(nil)
	spec := scriptedSpec(t, "say hi")
	spec.RuntimeID = "rt_7"
	rt, err := New(spec, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	rt.Start(context.Background())
	res := rt.Wait()
	if res.ExitCode != 0 || res.SessionID == "" {
		t.Fatalf("result %+v", res)
	}
	if rt.ID() != "rt_7" {
		t.Errorf("ID = %q", rt.ID())
	}
	st, ok := rt.Status().(control.Status)
	if !ok || st.SessionID != res.SessionID || st.RunID != "00000000000000aa" {
		t.Errorf("Status = %#v, want the snapshot of session %s", rt.Status(), res.SessionID)
	}
	rt.mu.Lock()
	end := rt.end
	rt.mu.Unlock()
	if end.FinalOutput == "" || end.SessionID != res.SessionID {
		t.Fatalf("the runtime kept no session.end fact: %+v", end)
	}
	out, _ := json.Marshal(rt.Result())
	want, _ := json.Marshal(map[string]any{"final_output": end.FinalOutput})
	if string(out) != string(want) {
		t.Errorf("Result = %s, want %s", out, want)
	}
	if rt.Pending() {
		t.Error("a permission is pending after the run")
	}
}

// TestRuntimeResultOutlivesHistory: result is the last session.end's final
// output even once the history no longer holds it.
func TestRuntimeResultOutlivesHistory(t *testing.T) {
	rt, err := New(scriptedSpec(t, "say hi"), Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	rt.Start(context.Background())
	rt.Wait()
	rt.mu.Lock()
	final := rt.end.FinalOutput
	rt.mu.Unlock()
	for i := 0; i < 5000; i++ { // past any history ring
		if _, err := rt.Events().Write(map[string]any{"event": "agent.message_chunk", "delta": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := rt.Result().(map[string]any)["final_output"]; final == "" || got != final {
		t.Fatalf("Result final_output = %q, want %q", got, final)
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStableRuntimeWriterIsBatched: a runtime with its own event log
// writes through the batched writer, as the run of `avenor run` does: a
// Write returns once its line is queued, so a log that blocks (here: its
// lock held) holds up no runtime, and the line reaches the log once it
// unblocks — also while parked, when the log is reopened for the write.
func TestStableRuntimeWriterIsBatched(t *testing.T) {
	spec := scriptedSpec(t, "say hi")
	spec.RuntimeID = "rt_1"
	spec.EventLog = filepath.Join(t.TempDir(), "ev.ndjson")
	rt, err := New(spec, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if res := rt.Begin(Turn{Prompt: "say hi"})(context.Background()); res.ExitCode != 0 {
		t.Fatalf("run %+v", res)
	}
	if err := rt.Park(); err != nil {
		t.Fatal(err)
	}
	rt.evlog.mu.Lock() // the log blocks
	wrote := make(chan error, 1)
	go func() {
		_, err := rt.Events().Write(map[string]any{"event": "test.marker"})
		wrote <- err
	}()
	select {
	case err := <-wrote:
		rt.evlog.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		rt.evlog.mu.Unlock()
		<-wrote
		t.Fatal("a runtime's Write waited for its blocked log: its writer is not batched")
	}
	if err := rt.Events().Flush(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(spec.EventLog)
	if !strings.Contains(string(data), `"event":"test.marker"`) || !strings.Contains(string(data), `"runtime_id":"rt_1"`) {
		t.Fatalf("the queued line never reached the log, or lacks the runtime id:\n%s", data)
	}
}

// TestRestoreContinuesTheLog: a restored runtime continues its log after
// the last seq it holds, parked (no file held open between writes), and
// ends an open turn there in error, keeping that session.end for the
// control views.
func TestRestoreContinuesTheLog(t *testing.T) {
	spec := scriptedSpec(t, "")
	spec.RuntimeID = "rt_3"
	spec.EventLog = filepath.Join(t.TempDir(), "ev.ndjson")
	before := `{"event":"session.start","seq":1}` + "\n" + `{"event":"avenor.turn.start","seq":2}` + "\n"
	if err := os.WriteFile(spec.EventLog, []byte(before), 0o600); err != nil {
		t.Fatal(err)
	}
	seq, typ, err := LogTail(spec.EventLog)
	if err != nil || seq != 2 || typ != "avenor.turn.start" {
		t.Fatalf("LogTail = %d %q %v", seq, typ, err)
	}
	rt := Restore(spec, seq, Deps{})
	defer rt.Close()
	if err := rt.EndTurn("s1", "the supervisor died"); err != nil {
		t.Fatal(err)
	}
	rt.evlog.mu.Lock()
	open := rt.evlog.f != nil
	rt.evlog.mu.Unlock()
	if open {
		t.Error("a restored runtime holds its log open while parked")
	}
	end, _ := rt.LastEnd()
	if seq, _ := control.SeqOf(end); seq != 4 || end["stop_reason"] != "error" || end["session_id"] != "s1" {
		t.Fatalf("LastEnd = %v, want the session.end of seq 4", end)
	}
	data, _ := os.ReadFile(spec.EventLog)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 4 || !strings.HasPrefix(string(data), before) ||
		!strings.Contains(lines[2], `"seq":3`) || !strings.Contains(lines[3], `"event":"session.end"`) || !strings.Contains(lines[3], `"runtime_id":"rt_3"`) {
		t.Fatalf("log:\n%s", data)
	}
}

// TestKillEndsTheRun: Kill stops the plugin of the run in flight, and the
// run ends at once rather than waiting for its turn.
func TestKillEndsTheRun(t *testing.T) {
	spec := scriptedSpec(t, "")
	spec.RuntimeID = "rt_2"
	spec.EventLog = filepath.Join(t.TempDir(), "ev.ndjson")
	rt, err := New(spec, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	run := rt.Begin(Turn{Prompt: "sleep 60s"})
	done := make(chan hostrt.Result, 1)
	go func() { done <- run(context.Background()) }()
	for deadline := time.Now().Add(10 * time.Second); rt.Snapshot().TurnState != control.TurnRunning; {
		if time.Now().After(deadline) {
			t.Fatalf("the turn never ran: %+v", rt.Snapshot())
		}
		time.Sleep(10 * time.Millisecond)
	}
	rt.Kill()
	select {
	case res := <-done:
		if res.ExitCode == 0 {
			t.Fatalf("a killed run ended well: %+v", res)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the run went on after Kill")
	}
}
