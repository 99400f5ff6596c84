package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
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

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// recHost is a runtime.Host that records events and permission requests in
// one ordered log and answers permissions with decide.
type recHost struct {
	mu     sync.Mutex
	log    []map[string]any
	procs  []runtime.ProcessInfo
	decide func(ctx context.Context, req runtime.PermissionRequest) (runtime.PermissionDecision, error)
	onEmit func(ev runtime.Event)
}

func (h *recHost) Emit(ev runtime.Event) {
	h.mu.Lock()
	rec := map[string]any{"event": string(ev.Type)}
	for k, v := range ev.Fields {
		rec[k] = v
	}
	h.log = append(h.log, rec)
	on := h.onEmit
	h.mu.Unlock()
	if on != nil {
		on(ev)
	}
}

func (h *recHost) AskPermission(ctx context.Context, req runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	h.mu.Lock()
	h.log = append(h.log, map[string]any{
		"event": "(permission request)", "request_id": req.ID, "options": req.Options, "tool": req.Tool,
		"question": req.Question, "requires_user_input": req.RequiresUserInput, "fields": req.Fields,
	})
	decide := h.decide
	h.mu.Unlock()
	if decide == nil {
		return runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}, errors.New("no decider")
	}
	return decide(ctx, req)
}

func (h *recHost) Logger() hclog.Logger { return hclog.NewNullLogger() }

func (h *recHost) RecordProcess(p runtime.ProcessInfo) {
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
}

func (h *recHost) record(rec map[string]any) {
	h.mu.Lock()
	h.log = append(h.log, rec)
	h.mu.Unlock()
}

func (h *recHost) lines() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b bytes.Buffer
	for _, rec := range h.log {
		line, err := json.Marshal(rec)
		if err != nil {
			line = []byte(fmt.Sprintf("%q", err.Error()))
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// choose answers every permission request with the option of that id.
func choose(optionID string) func(context.Context, runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	return func(_ context.Context, req runtime.PermissionRequest) (runtime.PermissionDecision, error) {
		for _, o := range req.Options {
			if o.ID == optionID {
				return runtime.PermissionDecision{Outcome: runtime.OutcomeSelected, OptionID: o.ID, Kind: runtime.DecisionKind(o.Kind)}, nil
			}
		}
		return runtime.PermissionDecision{}, fmt.Errorf("no option %q", optionID)
	}
}

// waitForCtx never decides: it waits until the request is withdrawn or the
// turn cancelled.
func waitForCtx(ctx context.Context, _ runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	<-ctx.Done()
	return runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}, ctx.Err()
}

// replayConfig starts the test binary as the agent of a transcript.
func replayConfig(t *testing.T, transcript string) Config {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", transcript))
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Backend: "test-acp", Binary: os.Args[0], Dir: t.TempDir(),
		Env:         append(os.Environ(), replayEnv+"="+path),
		InstallHint: "install the test agent", CancelWait: 500 * time.Millisecond, StopGrace: time.Second,
	}
}

// transcriptMCPServers are a launch context's MCP servers: stdio, http.
var transcriptMCPServers = []runtime.MCPServer{
	{Name: "files", Type: runtime.MCPStdio, Command: "/bin/files", Args: []string{"-v"}, Env: []runtime.NameValue{{Name: "TOKEN", Value: "s3cret"}}},
	{Name: "web", Type: runtime.MCPHTTP, URL: "https://mcp.example/x", Headers: []runtime.NameValue{{Name: "Authorization", Value: "Bearer t"}}},
}

type transcriptCase struct {
	name   string
	config func(*Config)
	decide func(context.Context, runtime.PermissionRequest) (runtime.PermissionDecision, error)
	// prompts are the turns to run; default one.
	prompts []string
	// cancelOn, when set, cancels the turn once an event of that type (or
	// the permission request) has been seen.
	cancelOn runtime.EventType
	openErr  string // expected in Open's error
	fault    runtime.Fault
}

func TestTranscripts(t *testing.T) {
	cases := []transcriptCase{
		{name: "opencode_allow", decide: choose("once"), prompts: []string{"Create out.txt containing hello using the shell."}},
		{name: "opencode_reject", decide: choose("reject"), prompts: []string{"Create out.txt containing hello using the shell."}},
		{name: "opencode_resume_model", config: func(c *Config) { c.ResumeSessionID, c.Mode, c.Model = "ses_resumed", "reviewer", "fake/other-model" }},
		{name: "gemini_allow", decide: choose("proceed_once")},
		{name: "gemini_load_model", prompts: []string{"What did you do before?"},
			config: func(c *Config) {
				c.ResumeSessionID, c.Mode, c.Model = "5ee9e7df-4b9e-4c51-9f4e-2f1d0c3b7a11", "plan", "gemini-2.5-pro"
			}},
		{name: "cursor_auth", decide: choose("allow-always"), config: func(c *Config) { c.AuthMethod, c.Model = "cursor_login", "gpt-5" }},
		{name: "mcp_servers", config: func(c *Config) { c.MCPServers = transcriptMCPServers }},
		{name: "mcp_http_refused", openErr: `does not take http MCP servers (server "web")`, fault: runtime.FaultUser,
			config: func(c *Config) { c.MCPServers = transcriptMCPServers[1:] }},
		{name: "cancel", cancelOn: runtime.EventMessageChunk},
		{name: "cancel_permission", decide: waitForCtx, cancelOn: "(permission request)"},
		{name: "cancel_ignored", cancelOn: runtime.EventMessageChunk},
		{name: "wire_oddities", decide: waitForCtx},
		{name: "multi_turn", prompts: []string{"one", "two"}, config: func(c *Config) {
			c.Extensions = map[string]Extension{"x/echo": func(_ context.Context, _ *Session, _ string, params json.RawMessage) (any, *RPCError) {
				var p struct{ Say string }
				_ = json.Unmarshal(params, &p)
				return map[string]string{"said": p.Say}, nil
			}}
		}},
		{name: "exit_mid_turn"},
		{name: "exit_during_init", openErr: "exited during initialize (exit status 2); is it a version with ACP support?", fault: runtime.FaultRuntime},
		{name: "not_acp", openErr: "wrote output that is not ACP", fault: runtime.FaultRuntime},
		{name: "auth_required", openErr: "needs authentication: Authentication required", fault: runtime.FaultUser},
		{name: "resume_not_found", openErr: "session not found", fault: runtime.FaultUser,
			config: func(c *Config) { c.ResumeSessionID = "nope" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runTranscript(t, tc)
		})
	}
}

func runTranscript(t *testing.T, tc transcriptCase) {
	cfg := replayConfig(t, tc.name+".txt")
	if tc.config != nil {
		tc.config(&cfg)
	}
	h := &recHost{decide: tc.decide}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := Open(ctx, cfg, h)
	if tc.openErr != "" {
		if err == nil {
			sess.Close(ctx)
			t.Fatalf("Open succeeded; want an error containing %q", tc.openErr)
		}
		if !strings.Contains(err.Error(), tc.openErr) || runtime.FaultOf(err) != tc.fault {
			t.Fatalf("Open error = %v (fault %s); want %q, fault %s", err, runtime.FaultOf(err), tc.openErr, tc.fault)
		}
		if len(h.procs) != 1 || h.procs[0].PGID <= 1 {
			t.Errorf("process recorded at start = %+v; want one with a group", h.procs)
		}
		return
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer sess.Close(context.Background())
	h.record(map[string]any{"event": "(opened)", "session_id": sess.ID(), "start_fields": sess.StartFields()})
	if p := sess.Process(); p.PID <= 0 || p.PGID <= 1 {
		t.Errorf("Process() = %+v; want the agent's pid and its group", p)
	} else if g, err := syscall.Getpgid(p.PID); err != nil || g != p.PGID {
		t.Errorf("Process() = %+v; the agent is in group %d (%v)", p, g, err)
	}
	if tc.cancelOn != "" {
		var once sync.Once
		trigger := func() { once.Do(func() { go sess.Cancel(context.Background()) }) }
		h.onEmit = func(ev runtime.Event) {
			if ev.Type == tc.cancelOn {
				trigger()
			}
		}
		if tc.cancelOn == "(permission request)" {
			inner := h.decide
			h.decide = func(ctx context.Context, req runtime.PermissionRequest) (runtime.PermissionDecision, error) {
				trigger()
				return inner(ctx, req)
			}
		}
	}
	prompts := tc.prompts
	if len(prompts) == 0 {
		prompts = []string{"go"}
	}
	for i, p := range prompts {
		res, err := sess.Prompt(ctx, runtime.Turn{ID: fmt.Sprint(i + 1), Text: p})
		rec := map[string]any{"event": "(turn end)", "stop_reason": string(res.StopReason), "usage": res.Usage}
		if err != nil {
			rec["error"] = err.Error()
			rec["fault"] = runtime.FaultOf(err)
		}
		h.record(rec)
	}
	unknown, bad, replayed := sess.Stats()
	h.record(map[string]any{"event": "(stats)", "unknown": unknown, "bad_frames": bad, "replayed": replayed})
	checkGolden(t, tc.name, normalise(h.lines()))
}

// normalise replaces what differs between runs: the test binary's path.
func normalise(s string) string {
	return strings.ReplaceAll(s, os.Args[0], "<agent>")
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("events differ from %s (go test -update rewrites it)\n--- got\n%s--- want\n%s", path, got, want)
	}
}
