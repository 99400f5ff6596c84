package scripted_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest/scripted"
	"github.com/avenor-go/avenor/sdk/runtime"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { cleanupBinaries() }))
}

const (
	msg     = runtime.EventMessageChunk
	thought = runtime.EventThoughtChunk
	call    = runtime.EventToolCall
	update  = runtime.EventToolCallUpdate
)

func TestInfoCrossesTheWire(t *testing.T) {
	b := backend(t, serve(t))
	if want := scripted.New().Info(); !reflect.DeepEqual(b.Info(), want) {
		t.Errorf("Info over gRPC = %+v\nwant %+v", b.Info(), want)
	}
	info := b.Info()
	for _, c := range runtime.CapabilityNames {
		want := runtime.Supported
		if c == runtime.CapModelSelection || c == runtime.CapExternalServerURL {
			want = runtime.Unsupported
		}
		if got := info.Capability(c); got != want {
			t.Errorf("capability %s = %s, want %s", c, got, want)
		}
	}
	if !reflect.DeepEqual(info.ThinkingLevels, []string{"low", "medium", "high"}) || info.ResumeScope != runtime.ResumeCrossProcess {
		t.Errorf("thinking %v, resume scope %q", info.ThinkingLevels, info.ResumeScope)
	}
	if r := b.Check(context.Background(), runtime.CheckRequest{Backend: scripted.Name}); !r.Ready {
		t.Errorf("Check = %+v", r)
	}
}

func TestOpen(t *testing.T) {
	b := backend(t, serve(t))
	cases := []struct {
		name  string
		req   runtime.OpenRequest
		fault runtime.Fault // "" → opens
		says  string
	}{
		{"plain", runtime.OpenRequest{}, "", ""},
		{"thinking accepted", runtime.OpenRequest{Thinking: "medium"}, "", ""},
		{"thinking refused", runtime.OpenRequest{Thinking: "xhigh"}, runtime.FaultUser, `not "xhigh"`},
		{"fail_open", runtime.OpenRequest{Options: map[string]any{"fail_open": "no runtime today"}}, runtime.FaultRuntime, "no runtime today"},
		{"unknown resume", runtime.OpenRequest{ResumeSessionID: "scr_nope"}, runtime.FaultUser, "session not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Backend, tc.req.Dir, tc.req.StateDir = scripted.Name, t.TempDir(), t.TempDir()
			sess, err := b.Open(context.Background(), tc.req, &testHost{})
			if tc.fault == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(sess.ID(), "scr_") {
					t.Errorf("session id = %q", sess.ID())
				}
				_ = sess.Close(context.Background())
				return
			}
			var rerr *runtime.Error
			if !errors.As(err, &rerr) || rerr.Fault != tc.fault || !strings.Contains(rerr.Message, tc.says) {
				t.Fatalf("Open = %v, want a %s-fault error saying %q", err, tc.fault, tc.says)
			}
		})
	}
}

func TestCommands(t *testing.T) {
	type want struct {
		stop  runtime.StopReason
		types []runtime.EventType // nil: not checked
		text  string              // the message text
		usage *runtime.Usage
		fault runtime.Fault // of the turn's error; "" → none
		err   string
	}
	cases := []struct {
		name   string
		script string
		answer func(runtime.PermissionRequest) runtime.PermissionDecision
		want   want
	}{
		{"empty", "", nil, want{stop: runtime.StopEndTurn, types: []runtime.EventType{}}},
		{"say and think", "think hmm\nsay hello world", nil, want{stop: runtime.StopEndTurn, types: []runtime.EventType{thought, msg}, text: "hello world"}},
		{"say quoted", `say "[loop: exit]\n"`, nil, want{stop: runtime.StopEndTurn, types: []runtime.EventType{msg}, text: "[loop: exit]\n"}},
		{"chunks", "chunks 3 text=ab", nil, want{stop: runtime.StopEndTurn, types: []runtime.EventType{msg, msg, msg}, text: "ababab"}},
		{"chunks default text", "chunks 2 every=5ms", nil, want{stop: runtime.StopEndTurn, types: []runtime.EventType{msg, msg}, text: "chunk 1\nchunk 2\n"}},
		{"flood", "flood 2000", nil, want{stop: runtime.StopEndTurn, text: strings.Repeat("x", 2000)}},
		{"sleep", "sleep 10ms\nsay woke", nil, want{stop: runtime.StopEndTurn, types: []runtime.EventType{msg}, text: "woke"}},
		{"tool", "tool read the file kind=read", nil, want{stop: runtime.StopEndTurn, types: []runtime.EventType{call, update}}},
		{"permission allowed", "permission\nsay after", allow("allow", runtime.KindAllowOnce),
			want{stop: runtime.StopEndTurn, types: []runtime.EventType{msg, msg}, text: "permission allow (allow_once)after"}},
		{"permission denied", "permission", allow("deny", runtime.KindReject),
			want{stop: runtime.StopEndTurn, text: "permission deny (reject)"}},
		{"permission kind from the option", "permission options=yes:allow_always,no:reject", allow("yes", ""),
			want{stop: runtime.StopEndTurn, text: "permission yes (allow_always)"}},
		{"permission cancelled", "permission\nsay never", func(runtime.PermissionRequest) runtime.PermissionDecision {
			return runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}
		}, want{stop: runtime.StopCancelled, text: "permission cancelled"}},
		{"usage", "usage in=7 out=3", nil, want{stop: runtime.StopEndTurn, usage: &runtime.Usage{InputTokens: 7, OutputTokens: 3, TotalTokens: 10}}},
		{"stop", "usage in=1 out=1\nsay a\nstop max_tokens\nsay never", nil,
			want{stop: runtime.StopMaxTokens, text: "a", usage: &runtime.Usage{InputTokens: 1, OutputTokens: 1, TotalTokens: 2}}},
		{"fail", "say a\nfail the model fell over\nsay never", nil,
			want{stop: runtime.StopError, text: "a", fault: runtime.FaultRuntime, err: "the model fell over"}},
		{"unknown command", "say a\nfrobnicate", nil,
			want{stop: runtime.StopError, types: []runtime.EventType{}, fault: runtime.FaultUser, err: `line 2 ("frobnicate"): unknown command`}},
		{"shell", "shell printf 'in %s' \"$(basename \"$PWD\")\"", nil, want{stop: runtime.StopEndTurn, types: []runtime.EventType{msg}}},
		{"shell fails", "shell echo oops >&2; exit 3\nsay never", nil,
			want{stop: runtime.StopError, types: []runtime.EventType{}, fault: runtime.FaultRuntime, err: "oops"}},
		{"announce", "say a\nannounce", nil, want{stop: runtime.StopEndTurn, text: "turn 1a"}},
	}
	b := backend(t, serve(t))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := openWith(t, b, runtime.OpenRequest{}, &testHost{answer: tc.answer})
			r := await(t, f.run(tc.script), 5*time.Second)
			if r.res.StopReason != tc.want.stop {
				t.Errorf("stop reason = %q, want %q (err %v)", r.res.StopReason, tc.want.stop, r.err)
			}
			if tc.want.fault == "" && r.err != nil {
				t.Errorf("turn error: %v", r.err)
			}
			if tc.want.fault != "" {
				if runtime.FaultOf(r.err) != tc.want.fault || !strings.Contains(r.err.Error(), tc.want.err) {
					t.Errorf("turn error = %v (fault %s), want a %s fault saying %q", r.err, runtime.FaultOf(r.err), tc.want.fault, tc.want.err)
				}
			}
			if tc.want.types != nil {
				if got := f.host.types(); !reflect.DeepEqual(append([]runtime.EventType{}, got...), tc.want.types) {
					t.Errorf("event types = %v, want %v", got, tc.want.types)
				}
			}
			if tc.want.text != "" {
				if got := f.host.text(msg); got != tc.want.text {
					t.Errorf("message text = %q, want %q", got, tc.want.text)
				}
			}
			if !reflect.DeepEqual(r.res.Usage, tc.want.usage) {
				t.Errorf("usage = %+v, want %+v", r.res.Usage, tc.want.usage)
			}
			if r.res.HasFinalOutput {
				t.Errorf("scripted set a final output: %q", r.res.FinalOutput)
			}
		})
	}
}

func TestShellRunsInTheSessionDir(t *testing.T) {
	f := openWith(t, backend(t, serve(t)), runtime.OpenRequest{Env: map[string]string{"GREETING": "hi"}}, &testHost{})
	r := await(t, f.run(`shell printf '%s %s' "$GREETING" "$PWD"`), 5*time.Second)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got, want := f.host.text(msg), "hi "+f.dir; got != want {
		t.Errorf("shell output = %q, want %q", got, want)
	}
}

func TestWrite(t *testing.T) {
	f := openWith(t, backend(t, serve(t)), runtime.OpenRequest{}, &testHost{})
	r := await(t, f.run("write notes/today.txt \"done\\n\"\nwrite top.txt plain text"), 5*time.Second)
	if r.err != nil || r.res.StopReason != runtime.StopEndTurn {
		t.Fatalf("turn = %+v, %v", r.res, r.err)
	}
	for path, want := range map[string]string{"notes/today.txt": "done\n", "top.txt": "plain text"} {
		if got, err := os.ReadFile(filepath.Join(f.dir, path)); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", path, got, err, want)
		}
	}
}

func TestToolCallIDsAreUniqueAcrossTurns(t *testing.T) {
	f := openWith(t, backend(t, serve(t)), runtime.OpenRequest{}, &testHost{})
	await(t, f.run("tool a kind=read\ntool b"), 5*time.Second)
	await(t, f.run("tool c kind=edit"), 5*time.Second)
	seen := map[any]bool{}
	var calls int
	for _, ev := range f.host.snapshot() {
		if ev.Type != call {
			continue
		}
		calls++
		id := ev.Fields["toolCallId"]
		if seen[id] || id == "" || id == nil {
			t.Errorf("tool call id %v repeated or empty", id)
		}
		seen[id] = true
		if ev.Fields["status"] != "pending" {
			t.Errorf("tool.call status = %v", ev.Fields["status"])
		}
	}
	if calls != 3 {
		t.Errorf("%d tool calls, want 3", calls)
	}
}

func TestPermissionRequestCrossesTheWire(t *testing.T) {
	f := openWith(t, backend(t, serve(t)), runtime.OpenRequest{}, &testHost{answer: allow("go", runtime.KindAllowOnce)})
	r := await(t, f.run(`permission tool=bash question="Run rm -rf build?" options=go:allow_once,stop:reject user_input=true`), 5*time.Second)
	if r.err != nil {
		t.Fatal(r.err)
	}
	asked := f.host.permissions()
	if len(asked) != 1 {
		t.Fatalf("%d permission requests", len(asked))
	}
	got := asked[0]
	want := []runtime.PermissionOption{{ID: "go", Kind: "allow_once"}, {ID: "stop", Kind: "reject"}}
	if got.ID == "" || got.Tool != "bash" || got.Question != "Run rm -rf build?" || !got.RequiresUserInput || !reflect.DeepEqual(got.Options, want) {
		t.Errorf("permission request = %+v", got)
	}
}

func TestCancel(t *testing.T) {
	cases := []struct{ name, script, ready string }{
		{"sleep", "say ready\nsleep 30s\nsay never", "ready"},
		{"chunks", "chunks 1000 every=10ms text=.\nsay never", "."},
		{"permission", "say ready\npermission\nsay never", "ready"},
		{"shell", "say ready\nshell sleep 30\nsay never", "ready"},
	}
	b := backend(t, serve(t))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := openWith(t, b, runtime.OpenRequest{}, &testHost{}) // never answers permissions
			ch := f.run(tc.script)
			f.host.waitText(t, tc.ready)
			start := time.Now()
			if err := f.sess.Cancel(context.Background()); err != nil {
				t.Fatal(err)
			}
			r := await(t, ch, 3*time.Second)
			if r.res.StopReason != runtime.StopCancelled || r.err != nil {
				t.Errorf("turn = %+v, %v; want cancelled", r.res, r.err)
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("cancel took %v", took)
			}
			if strings.Contains(f.host.text(msg), "never") {
				t.Error("the script went on after Cancel")
			}
		})
	}
}

func TestIgnoreCancel(t *testing.T) {
	f := openWith(t, backend(t, serve(t)), runtime.OpenRequest{}, &testHost{})
	ch := f.run("ignore-cancel\nsay ready\nsleep 30s")
	f.host.waitText(t, "ready")
	if err := f.sess.Cancel(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ch:
		t.Fatalf("the turn honoured Cancel: %+v %v", r.res, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	// Closing the session still stops it.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := f.sess.Close(ctx); err != nil {
		t.Fatal(err)
	}
	await(t, ch, 3*time.Second)
}

func TestResumeAcrossPluginProcesses(t *testing.T) {
	state := t.TempDir()
	first := openWith(t, backend(t, serve(t)), runtime.OpenRequest{StateDir: state}, &testHost{})
	await(t, first.run("announce"), 5*time.Second)
	await(t, first.run("announce"), 5*time.Second)
	if got := first.host.text(msg); got != "turn 1turn 2" {
		t.Errorf("first process said %q", got)
	}
	_ = first.sess.Close(context.Background())

	second := openWith(t, backend(t, serve(t)), runtime.OpenRequest{StateDir: state, ResumeSessionID: first.sess.ID()}, &testHost{})
	if second.sess.ID() != first.sess.ID() {
		t.Errorf("resumed id %q, want %q", second.sess.ID(), first.sess.ID())
	}
	await(t, second.run("announce\nsay !"), 5*time.Second)
	if got := second.host.text(msg); got != "turn 3!" {
		t.Errorf("resumed session said %q, want %q", got, "turn 3!")
	}
}

func TestScriptFromFile(t *testing.T) {
	script := filepath.Join(t.TempDir(), "script.txt")
	if err := os.WriteFile(script, []byte("# from a file\nsay from file\nstop refusal\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := backend(t, serve(t))
	f := openWith(t, b, runtime.OpenRequest{}, &testHost{})
	r := await(t, f.run("@file:"+script), 5*time.Second)
	if r.err != nil || r.res.StopReason != runtime.StopRefusal || f.host.text(msg) != "from file" {
		t.Errorf("turn = %+v, %v; said %q", r.res, r.err, f.host.text(msg))
	}
	for _, bad := range []string{"@file:relative.txt", "@file:" + script + ".missing"} {
		r := await(t, f.run(bad), 5*time.Second)
		if runtime.FaultOf(r.err) != runtime.FaultUser {
			t.Errorf("%s: error %v, want a user fault", bad, r.err)
		}
	}
}

func TestChildIsReportedAndKilledByClose(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	host := &testHost{}
	f := openWith(t, backend(t, serve(t)), runtime.OpenRequest{Env: map[string]string{scripted.PIDFileEnv: pidFile}}, host)
	r := await(t, f.run("child 30\nsay started"), 5*time.Second)
	if r.err != nil {
		t.Fatal(r.err)
	}
	pid := readPID(t, pidFile)
	if !alive(pid) {
		t.Fatalf("child %d is not running", pid)
	}
	if p := f.sess.Process(); p.PID != pid || p.PGID != pid {
		t.Errorf("Session.Process() = %+v, want pid and pgid %d", p, pid)
	}
	host.mu.Lock()
	procs := append([]runtime.ProcessInfo(nil), host.procs...)
	host.mu.Unlock()
	if n := len(procs); n == 0 || procs[n-1].PID != pid || procs[n-1].PGID != pid {
		t.Errorf("processes recorded by the host = %+v, want the last one to be %d", procs, pid)
	}

	if err := f.sess.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("child %d outlived Close", pid)
	}
}

func TestChildIsKilledWhenThePluginStops(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	c := serve(t)
	f := openWith(t, backend(t, c), runtime.OpenRequest{Env: map[string]string{scripted.PIDFileEnv: pidFile}}, &testHost{})
	await(t, f.run("child 30"), 5*time.Second)
	pid := readPID(t, pidFile)
	c.Kill() // the host goes away without closing the session
	waitUntil(t, "the child to die", func() bool { return !alive(pid) })
}

// A runtime that prints a 100 MB line and then valid frames: the over-long
// line becomes one avenor.warning (read in bounded memory, never buffered),
// the frames after it still arrive, and the turn ends.
func TestOverlongRuntimeLineIsAWarningAndTheTurnEnds(t *testing.T) {
	f := openWith(t, backend(t, serve(t)), runtime.OpenRequest{}, &testHost{})
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	r := await(t, f.run(`lines head -c 100000000 /dev/zero | tr '\0' a; echo; echo ok`), 30*time.Second)
	goruntime.ReadMemStats(&after)
	if r.err != nil || r.res.StopReason != runtime.StopEndTurn {
		t.Fatalf("turn ended %+v %v", r.res, r.err)
	}
	if got := fmt.Sprint(f.host.types()); got != "[avenor.warning agent.message_chunk]" {
		t.Fatalf("events %s", got)
	}
	if f.host.text(msg) != "ok" {
		t.Fatalf("text after the long line = %q", f.host.text(msg))
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("allocated %d MiB reading a 100 MB line", grew>>20)
	}
}

// TestResumeInProcessOnly: with resume scope in_process a session resumes
// in the process that opened it, and a fresh process refuses it as not
// found, though the state directory knows it.
func TestResumeInProcessOnly(t *testing.T) {
	serveIn := func() runtime.Backend {
		c, err := plugin.ServeInProcess(context.Background(), plugin.Info{Name: "scripted", Version: scripted.Version}, nil, scripted.NewInProcess())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Kill)
		return backend(t, c)
	}
	b := serveIn()
	if got := b.Info().ResumeScope; got != runtime.ResumeInProcess {
		t.Fatalf("resume scope %q, want in_process", got)
	}
	state := t.TempDir()
	first := openWith(t, b, runtime.OpenRequest{StateDir: state}, &testHost{})
	await(t, first.run("announce"), 5*time.Second)
	_ = first.sess.Close(context.Background())
	again := openWith(t, b, runtime.OpenRequest{StateDir: state, ResumeSessionID: first.sess.ID()}, &testHost{})
	await(t, again.run("announce"), 5*time.Second)
	if got := again.host.text(msg); got != "turn 2" {
		t.Errorf("resumed in the same process: said %q, want turn 2", got)
	}
	_, err := serveIn().Open(context.Background(), runtime.OpenRequest{Backend: scripted.Name, Dir: t.TempDir(), StateDir: state, ResumeSessionID: first.sess.ID()}, &testHost{})
	if err == nil || runtime.FaultOf(err) != runtime.FaultUser || !strings.Contains(err.Error(), "session not found") || !strings.Contains(err.Error(), "in_process") {
		t.Errorf("resume in a fresh process: %v (fault %s), want a user-fault session not found naming in_process", err, runtime.FaultOf(err))
	}
	if got := scripted.New().Info().ResumeScope; got != runtime.ResumeCrossProcess {
		t.Errorf("New without %s: scope %q", scripted.ResumeScopeEnv, got)
	}
	t.Setenv(scripted.ResumeScopeEnv, runtime.ResumeInProcess)
	if got := scripted.New().Info().ResumeScope; got != runtime.ResumeInProcess {
		t.Errorf("New with %s=in_process: scope %q", scripted.ResumeScopeEnv, got)
	}
}
