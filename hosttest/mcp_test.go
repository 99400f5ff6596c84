package hosttest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpTool is one tool of the reference (mcp-board-original.md §1): its
// params, which of them are required, and the keys its result may hold
// (required keys first: every successful call returns them).
type mcpTool struct {
	name     string
	params   []string
	required []string
	result   []string // always present
	optional []string // may be present
}

var mcpReference = []mcpTool{
	{"avenor_spawn", []string{"repo_dir", "agent", "prompt", "prompt_file", "label", "timeout", "model", "thinking", "backend",
		"roster_file", "roster_entry", "server_url", "supervisor_id", "auto_approve", "questions",
		"permission_mode", "append_system_prompt", "allowed_tools", "mcp_config",
		// The turn watchdog's (docs/unattended.md), additive.
		"progress_timeout", "tool_timeout", "watchdog", "watchdog_restarts",
		// The sandbox's (docs/sandbox.md), additive.
		"sandbox", "sandbox_network", "sandbox_allow_write", "sandbox_deny_read", "sandbox_recover",
		// Rate limits (docs/unattended.md#rate-limits), additive.
		"wait_on_rate_limit", "max_rate_limit_resumes", "report_usage",

		// Spend limits (docs/unattended.md#spend-limits), additive.
		"spend_tokens", "spend_usd", "spend_wall", "spend_scope", "spend_policy", "context_warn_pct", "auto_compact_pct"}, []string{"repo_dir"},
		[]string{"run_id", "label", "supervisor_id"}, []string{"runtime_id"}},
	{"avenor_status", []string{"run_id", "view", "wait_for", "timeout", "supervisor_id"}, nil,
		[]string{"run_id", "label", "status"}, []string{"runtime_id", "session_id", "stop_reason", "phase", "phase_label", "pending_permission",
			"permission", "latest_seq", "dir", "backend", "agent", "model", "parent_id", "children", "event_path", "usage", "final_output",
			"final_output_truncated", "supervisor_id", "follow_ups", "timed_out", "wait_clamped",
			"watchdog", "waiting_reason", "rate_limited_until", "spend"}},
	{"avenor_result", []string{"run_id", "wait", "timeout", "supervisor_id"}, []string{"run_id"},
		[]string{"run_id", "label", "status", "ready"}, []string{"runtime_id", "session_id", "stop_reason", "pending_permission", "permission",
			"output", "output_truncated", "output_event_path", "timed_out", "wait_clamped", "next"}},
	{"avenor_answer_permission", []string{"run_id", "option_id", "request_id", "message", "supervisor_id"}, []string{"run_id", "option_id"},
		[]string{"ok"}, nil},
	{"avenor_events", []string{"run_id", "types", "limit", "after_seq", "supervisor_id"}, []string{"run_id"},
		[]string{"events", "latest_seq"}, []string{"event_path"}},
	{"avenor_follow_up", []string{"run_id", "message", "label", "supervisor_id"}, []string{"run_id", "message"},
		[]string{"run_id", "label"}, []string{"runtime_id"}},
	{"avenor_shutdown", []string{"supervisor_id", "force"}, nil, []string{"ok", "cleaned_up"}, nil},
	{"avenor_cancel", []string{"run_id", "supervisor_id"}, []string{"run_id"}, []string{"ok", "run_id", "status"}, nil},
	{"avenor_list_backends", nil, nil, []string{"backends", "count"}, nil},
	{"avenor_answer_question", []string{"run_id", "request_id", "answers", "supervisor_id"}, []string{"run_id", "request_id", "answers"},
		[]string{"ok"}, nil},
	{"avenor_set_budget", []string{"run_id", "spend_tokens", "spend_usd", "spend_wall", "resume", "supervisor_id"}, []string{"run_id"},
		[]string{"ok", "run_id", "resumed"}, []string{"spend"}},
}

// mcpServer is one `avenor mcp` process and a go-sdk client session to it.
type mcpServer struct {
	t      *testing.T
	w      *world
	cs     *mcp.ClientSession
	cmd    *exec.Cmd
	socket string
}

// startMCP starts `avenor mcp` with args over stdio, its supervisor socket
// in the world's TMPDIR.
func startMCP(t *testing.T, w *world, socket string, args ...string) *mcpServer {
	t.Helper()
	cmd := exec.Command(bins.avenor, append([]string{"mcp", "--control-socket", socket}, args...)...)
	cmd.Env, cmd.Dir = w.env, w.work
	m := startMCPWith(t, cmd)
	m.w, m.socket = w, socket
	return m
}

// startMCPWith connects a go-sdk client to the `avenor mcp` cmd starts.
func startMCPWith(t *testing.T, cmd *exec.Cmd) *mcpServer {
	t.Helper()
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	cl := mcp.NewClient(&mcp.Implementation{Name: "hosttest", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect to avenor mcp: %v", err)
	}
	m := &mcpServer{t: t, cs: cs, cmd: cmd}
	t.Cleanup(func() {
		m.cs.Close()
		if t.Failed() {
			t.Logf("avenor mcp stderr:\n%s", stderr.String())
		}
	})
	return m
}

// startMCPHTTP starts `avenor mcp --transport http` on a free port and
// returns its base URL.
func startMCPHTTP(t *testing.T, w *world, socket, token string, args ...string) (string, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(bins.avenor, append([]string{"mcp", "--transport", "http", "--addr", "127.0.0.1:0", "--control-socket", socket}, args...)...)
	cmd.Env, cmd.Dir = append(append([]string{}, w.env...), "MCP_AUTH_TOKEN="+token), w.work
	stderr := &lockedBuffer{}
	pr, pw, _ := os.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		re := regexp.MustCompile(`on (http://\S+)/mcp`)
		for sc.Scan() {
			stderr.Write([]byte(sc.Text() + "\n"))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urlc <- m[1]
			}
		}
	}()
	select {
	case u := <-urlc:
		return u, stderr
	case <-time.After(15 * time.Second):
		t.Fatalf("avenor mcp --transport http did not say where it listens; stderr:\n%s", stderr.String())
	}
	return "", nil
}

type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func connectHTTP(t *testing.T, base, token string) *mcp.ClientSession {
	t.Helper()
	cl := mcp.NewClient(&mcp.Implementation{Name: "hosttest", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearerTransport{token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("connect over http: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool; a tool error comes back as isErr with its text.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): %v", name, args, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return nil, true, text.String()
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil || out == nil {
		t.Fatalf("%s: structured content %s is not an object", name, b)
	}
	return out, false, text.String()
}

func (m *mcpServer) call(name string, args map[string]any) map[string]any {
	m.t.Helper()
	out, isErr, text := callTool(m.t, m.cs, name, args)
	if isErr {
		m.t.Fatalf("%s(%v): tool error: %s", name, args, text)
	}
	return out
}

func (m *mcpServer) callErr(name string, args map[string]any) string {
	m.t.Helper()
	out, isErr, text := callTool(m.t, m.cs, name, args)
	if !isErr {
		m.t.Fatalf("%s(%v): want a tool error, got %v", name, args, out)
	}
	return text
}

// checkKeys fails unless out has every required key and nothing the
// reference does not name.
func checkKeys(t *testing.T, tool mcpTool, out map[string]any) {
	t.Helper()
	known := map[string]bool{}
	for _, k := range append(append([]string{}, tool.result...), tool.optional...) {
		known[k] = true
	}
	for _, k := range tool.result {
		if _, ok := out[k]; !ok {
			t.Errorf("%s result %v lacks %q", tool.name, out, k)
		}
	}
	for k := range out {
		if !known[k] {
			t.Errorf("%s result has key %q the reference does not name", tool.name, k)
		}
	}
}

// checkSchemas compares every tool's input schema with the reference:
// names, properties, required, and additionalProperties false.
func checkSchemas(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*mcp.Tool{}
	var names []string
	for _, tl := range res.Tools {
		got[tl.Name] = tl
		names = append(names, tl.Name)
	}
	var want []string
	for _, tool := range mcpReference {
		want = append(want, tool.name)
	}
	sort.Strings(names)
	sort.Strings(want)
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("tools %v, want %v", names, want)
	}
	for _, tool := range mcpReference {
		t.Run(tool.name, func(t *testing.T) {
			var sch struct {
				Type                 string                     `json:"type"`
				Properties           map[string]json.RawMessage `json:"properties"`
				Required             []string                   `json:"required"`
				AdditionalProperties *bool                      `json:"additionalProperties"`
			}
			b, _ := json.Marshal(got[tool.name].InputSchema)
			if err := json.Unmarshal(b, &sch); err != nil {
				t.Fatal(err)
			}
			var props []string
			for p := range sch.Properties {
				props = append(props, p)
			}
			sort.Strings(props)
			wantProps := append([]string{}, tool.params...)
			sort.Strings(wantProps)
			if strings.Join(props, ",") != strings.Join(wantProps, ",") {
				t.Errorf("params %v, want %v", props, wantProps)
			}
			req := append([]string{}, sch.Required...)
			sort.Strings(req)
			wantReq := append([]string{}, tool.required...)
			sort.Strings(wantReq)
			if strings.Join(req, ",") != strings.Join(wantReq, ",") {
				t.Errorf("required %v, want %v", req, wantReq)
			}
			if sch.Type != "object" || sch.AdditionalProperties == nil || *sch.AdditionalProperties {
				t.Errorf("schema %s must be an object refusing unknown keys", b)
			}
			if got[tool.name].Description == "" {
				t.Error("no description")
			}
		})
	}
}

// checkUnknownKeys calls every tool with its required params and one key
// the reference does not have: each must refuse it, naming it.
func checkUnknownKeys(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	for _, tool := range mcpReference {
		args := map[string]any{"rosterFile": "x"} // the original's example of a misspelled key
		for _, r := range tool.required {
			args[r] = "x"
		}
		if _, ok := args["answers"]; ok {
			args["answers"] = [][]string{{"x"}} // of its type, so only the unknown key is wrong
		}
		out, isErr, text := callTool(t, cs, tool.name, args)
		if !isErr || !strings.Contains(text, "rosterFile") {
			t.Errorf("%s with an unknown key: want an error naming it, got %v %q", tool.name, out, text)
		}
	}
}

// mcpWorld is a world whose HOME is short enough for the default socket.
func mcpWorld(t *testing.T) (*world, string) {
	w := newWorld(t)
	return w, filepath.Join(w.tmp, "sup.sock")
}

// TestMCPToolsStdio is the table test of every tool through the go-sdk
// client over stdio: names, params, required params and unknown-key
// refusal against the reference, then every tool once on a real
// supervisor with the echo backend, its result keys checked.
func TestMCPToolsStdio(t *testing.T) {
	w, sock := mcpWorld(t)
	m := startMCP(t, w, sock)
	checkSchemas(t, m.cs)
	checkUnknownKeys(t, m.cs)
	exerciseTools(t, m.cs, w, sock)
	assertSupervisorGone(t, sock)
}

// TestMCPToolsHTTP is the same over Streamable HTTP.
func TestMCPToolsHTTP(t *testing.T) {
	w, sock := mcpWorld(t)
	base, stderr := startMCPHTTP(t, w, sock, "s3cret-token-for-test")
	cs := connectHTTP(t, base, "s3cret-token-for-test")
	checkSchemas(t, cs)
	checkUnknownKeys(t, cs)
	exerciseTools(t, cs, w, sock)
	assertSupervisorGone(t, sock)
	if strings.Contains(stderr.String(), "s3cret-token-for-test") {
		t.Errorf("the token is in avenor mcp's stderr:\n%s", stderr.String())
	}
}

// exerciseTools runs each tool once, with the echo backend, and checks
// what it returns.
func exerciseTools(t *testing.T, cs *mcp.ClientSession, w *world, sock string) {
	t.Helper()
	ref := map[string]mcpTool{}
	for _, tool := range mcpReference {
		ref[tool.name] = tool
	}
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		out, isErr, text := callTool(t, cs, name, args)
		if isErr {
			t.Fatalf("%s(%v): %s", name, args, text)
		}
		checkKeys(t, ref[name], out)
		return out
	}
	sp := call("avenor_spawn", map[string]any{"repo_dir": w.work, "backend": "echo", "prompt": "hello child", "label": "kid"})
	if sp["label"] != "kid" || sp["supervisor_id"] != sock {
		t.Errorf("spawn: %v", sp)
	}
	runID, _ := sp["run_id"].(string)
	res := call("avenor_result", map[string]any{"run_id": runID, "timeout": "60s"})
	if res["status"] != "done" || res["ready"] != true || res["output"] != "echo (turn 1): hello child" {
		t.Fatalf("result: %v", res)
	}
	st := call("avenor_status", map[string]any{"run_id": "kid"})
	if st["status"] != "done" || st["run_id"] != runID {
		t.Errorf("status by label: %v", st)
	}
	lc := call("avenor_status", map[string]any{"run_id": runID, "view": "lifecycle"})
	if _, ok := lc["backend"]; ok {
		t.Errorf("lifecycle view keeps backend: %v", lc)
	}
	list, isErr, text := callTool(t, cs, "avenor_status", map[string]any{})
	if isErr || list["count"] != float64(1) {
		t.Errorf("status list: %v %s", list, text)
	}
	ev := call("avenor_events", map[string]any{"run_id": runID, "types": []string{"session.end"}})
	evs, _ := ev["events"].([]any)
	if len(evs) != 1 || ev["latest_seq"].(float64) < 3 {
		t.Errorf("events: %v", ev)
	} else if got := evs[0].(map[string]any)["run_id"]; got != runID {
		t.Errorf("the run's events carry run_id %v, the agent was given %s", got, runID)
	}
	fu := call("avenor_follow_up", map[string]any{"run_id": runID, "message": "and again"})
	if fu["label"] != "kid-followup" {
		t.Errorf("follow-up: %v", fu)
	}
	res2 := call("avenor_result", map[string]any{"run_id": fu["run_id"], "timeout": "60s"})
	if res2["status"] != "done" || res2["output"] != "echo (turn 2): and again" || res2["session_id"] != res["session_id"] {
		t.Errorf("follow-up result: %v (first %v)", res2, res)
	}
	st = call("avenor_status", map[string]any{"run_id": runID})
	if fus, _ := st["follow_ups"].([]any); len(fus) != 1 || fus[0] != fu["run_id"] {
		t.Errorf("status follow_ups: %v", st)
	}
	// A run to cancel, then a permission request to answer.
	long := call("avenor_spawn", map[string]any{"repo_dir": w.work, "backend": "echo", "prompt": strings.Repeat("word ", 400)})
	cn := call("avenor_cancel", map[string]any{"run_id": long["run_id"]})
	res3 := call("avenor_result", map[string]any{"run_id": long["run_id"], "timeout": "60s"})
	if cn["ok"] != true || res3["status"] != "killed" {
		t.Errorf("cancel: %v, then result %v", cn, res3)
	}
	perm := call("avenor_spawn", map[string]any{"repo_dir": w.work, "backend": "echo", "prompt": "ask permission please"})
	ws := call("avenor_status", map[string]any{"run_id": perm["run_id"], "wait_for": "terminal", "timeout": "60s"})
	if ws["status"] != "waiting" || ws["pending_permission"] != true {
		t.Fatalf("wait_for terminal ends at the permission: %v", ws)
	}
	if msg := callErrText(t, cs, "avenor_answer_permission", map[string]any{"run_id": runID, "option_id": "allow_once"}); !strings.Contains(msg, "no pending permission request") {
		t.Errorf("answer without a pending request: %q", msg)
	}
	call("avenor_answer_permission", map[string]any{"run_id": perm["run_id"], "option_id": "allow_once"})
	res4 := call("avenor_result", map[string]any{"run_id": perm["run_id"], "timeout": "60s"})
	if res4["status"] != "done" || !strings.Contains(res4["output"].(string), "ask permission please") {
		t.Errorf("after the answer: %v", res4)
	}
	if b, err := os.ReadFile(filepath.Join(w.work, "reply.txt")); err != nil || !strings.Contains(string(b), "ask permission please") {
		t.Errorf("the allowed write did not happen: %q %v", b, err)
	}
	lb := call("avenor_list_backends", map[string]any{})
	if lb["count"].(float64) < 1 || !strings.Contains(fmt.Sprint(lb["backends"]), "echo") {
		t.Errorf("list_backends: %v", lb)
	}
	sd := call("avenor_shutdown", map[string]any{})
	cleaned, _ := sd["cleaned_up"].([]any)
	if sd["ok"] != true || len(cleaned) < 8 {
		t.Errorf("shutdown: %v", sd)
	}
	for _, c := range cleaned {
		if _, err := os.Stat(c.(string)); err == nil {
			t.Errorf("shutdown left %s", c)
		}
	}
}

func callErrText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	out, isErr, text := callTool(t, cs, name, args)
	if !isErr {
		t.Fatalf("%s(%v): want a tool error, got %v", name, args, out)
	}
	return text
}

// assertSupervisorGone fails if a supervisor still answers at sock.
func assertSupervisorGone(t *testing.T, sock string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := os.Stat(sock)
		if os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the supervisor's socket %s is still there", sock)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lockedBuffer is in board_test.go.
