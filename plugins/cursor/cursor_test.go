package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const writePrompt = "Create out.txt containing hello using the shell."

func optionIDs(req map[string]any) []string {
	var ids []string
	opts, _ := req["options"].([]any)
	for _, o := range opts {
		m, _ := o.(map[string]any)
		id, _ := m["optionId"].(string)
		ids = append(ids, id)
	}
	return ids
}

// Allow: authenticate (cursor_login) before session/new, string request
// ids, the permission auto-approved, the file written.
func TestAllowWritesTheFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.avenor(nil, "--prompt", writePrompt, "--auto-approve")
	if r.exit != 0 || !strings.HasPrefix(r.sentinel, "DONE") {
		t.Fatalf("exit %d, sentinel %q, stderr %s", r.exit, r.sentinel, r.stderr)
	}
	if data, err := os.ReadFile(filepath.Join(e.dir, "out.txt")); err != nil || string(data) != "hello\n" {
		t.Errorf("out.txt = %q, %v", data, err)
	}
	reqs := r.of("permission.request")
	if len(reqs) != 1 || strings.Join(optionIDs(reqs[0]), ",") != "allow-once,allow-always,reject-once" {
		t.Fatalf("permission requests %v", reqs)
	}
	if id, _ := reqs[0]["request_id"].(string); !strings.HasPrefix(id, "req-") {
		t.Errorf("request_id %q: want Cursor's string id", id)
	}
	if calls := r.of("tool.call"); len(calls) != 1 || calls[0]["toolCallId"] == nil {
		t.Errorf("tool calls %v", calls)
	}
	if got := r.final(); got != "DONE" {
		t.Errorf("final output %q", got)
	}
	var methods []string
	for _, m := range e.agentLog() {
		if s, ok := m["method"].(string); ok {
			methods = append(methods, s)
		}
	}
	if got := strings.Join(methods, ","); !strings.HasPrefix(got, "initialize,authenticate,session/new,session/prompt") {
		t.Errorf("agent saw %s", got)
	}
	for _, ev := range r.of("session.start") {
		if ev["backend"] != "cursor-acp" || ev["plugin"] != "cursor" {
			t.Errorf("session.start %v", ev)
		}
	}
}

// Reject through the file handler: no file, the turn ends cleanly.
func TestRejectLeavesNoFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base := filepath.Join(t.TempDir(), "perm")
	var req map[string]any
	r := e.avenor(func(*exec.Cmd, string) {
		req = answerFile(t, base, func(map[string]any) string { return "reject-once" })
	}, "--prompt", writePrompt, "--permission-handler", "file:"+base)
	if r.exit != 0 || !strings.Contains(r.sentinel, "STOP_REASON=end_turn") {
		t.Fatalf("exit %d, sentinel %q, stderr %s", r.exit, r.sentinel, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "out.txt")); !os.IsNotExist(err) {
		t.Errorf("out.txt exists after a reject (%v)", err)
	}
	if req == nil || req["tool"] != "execute" && req["tool"] != "Shell" {
		t.Errorf(".req = %v", req)
	}
	resp := r.of("permission.response")
	if len(resp) != 1 || resp[0]["kind"] != "reject" || resp[0]["source"] != "file" {
		t.Errorf("permission.response %v", resp)
	}
	if updates := r.of("tool.call_update"); len(updates) == 0 || updates[len(updates)-1]["status"] != "failed" {
		t.Errorf("tool.call_update %v", updates)
	}
}

// Cancel mid-stream: SIGINT → session/cancel → the agent answers
// "cancelled"; exit 130, KILLED, no agent left behind.
func TestCancelMidStream(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	r := e.avenor(func(cmd *exec.Cmd, events string) {
		waitFor(t, 30*time.Second, "a streamed chunk", func() bool {
			data, _ := os.ReadFile(events)
			return strings.Contains(string(data), "tick 2")
		})
		_ = cmd.Process.Signal(syscall.SIGINT)
	}, "--prompt", "answer SLOW")
	if r.exit != 130 || !strings.HasPrefix(r.sentinel, "KILLED") {
		t.Fatalf("exit %d, sentinel %q, stderr %s", r.exit, r.sentinel, r.stderr)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("cancel took %s", time.Since(start))
	}
	if len(r.of("avenor.warning")) != 0 {
		t.Errorf("the agent honours cancel; no warning expected: %v", r.of("avenor.warning"))
	}
	var cancels int
	for _, m := range e.agentLog() {
		if m["method"] == "session/cancel" {
			cancels++
		}
	}
	if cancels != 1 {
		t.Errorf("session/cancel sent %d times", cancels)
	}
	waitFor(t, 5*time.Second, "no agent process left", func() bool { return len(agentsAlive()) == 0 })
}

// Resume: a second run continues the first session (session/load, whose
// replay stays out of the events).
func TestResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.avenor(nil, "--prompt", "remember the word pelican")
	if first.exit != 0 || first.sessionID() == "" {
		t.Fatalf("first run: exit %d, sentinel %q, stderr %s", first.exit, first.sentinel, first.stderr)
	}
	second := e.avenor(nil, "--resume", first.sessionID(), "--prompt", "RECALL")
	if second.exit != 0 || second.sessionID() != first.sessionID() {
		t.Fatalf("second run: exit %d, sentinel %q, stderr %s", second.exit, second.sentinel, second.stderr)
	}
	if got := second.final(); got != "HISTORY: remember the word pelican" {
		t.Errorf("final output %q", got)
	}
	if n := len(second.of("user.message_chunk")); n != 0 {
		t.Errorf("%d replayed user.message_chunk events reached the log", n)
	}
	bad := e.avenor(nil, "--resume", "cur-nosuch", "--prompt", "x")
	if bad.exit != 1 || !strings.Contains(bad.stderr, "session not found") {
		t.Errorf("unknown session: exit %d, stderr %s", bad.exit, bad.stderr)
	}
}

// cursor/ask_question needs a person: it is never auto-approved, its
// answers are the options, and the chosen one goes back to Cursor.
func TestAskQuestion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base := filepath.Join(t.TempDir(), "perm")
	var req map[string]any
	r := e.avenor(func(*exec.Cmd, string) {
		req = answerFile(t, base, func(map[string]any) string { return "rust" })
	}, "--prompt", "QUESTION", "--auto-approve", "--permission-handler", "file:"+base)
	if r.exit != 0 {
		t.Fatalf("exit %d, stderr %s", r.exit, r.stderr)
	}
	if got := strings.Join(optionIDs(req), ","); got != "go,rust,avenor:skip" {
		t.Errorf("options %s", got)
	}
	pr := r.of("permission.request")
	if len(pr) != 1 || pr[0]["requires_user_input"] != true || pr[0]["resolver"] != "file" || pr[0]["question"] != "Before I start: Which language?" {
		t.Errorf("permission.request %v", pr)
	}
	if got := r.final(); got != "ANSWER answered lang=rust" {
		t.Errorf("final output %q", got)
	}
}

// cursor/create_plan: accept or reject the plan.
func TestCreatePlan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ option, want string }{{"accept", "PLAN accepted"}, {"reject", "PLAN rejected"}} {
		t.Run(tc.option, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			base := filepath.Join(t.TempDir(), "perm")
			r := e.avenor(func(*exec.Cmd, string) {
				answerFile(t, base, func(map[string]any) string { return tc.option })
			}, "--prompt", "PLAN", "--permission-handler", "file:"+base)
			if r.exit != 0 || r.final() != tc.want {
				t.Errorf("exit %d, final %q, stderr %s", r.exit, r.final(), r.stderr)
			}
			if pr := r.of("permission.request"); len(pr) != 1 || pr[0]["tool"] != "create_plan" || pr[0]["requires_user_input"] != true {
				t.Errorf("permission.request %v", pr)
			}
		})
	}
}

// cursor/update_todos, as a notification and as a request, becomes
// session.plan with the merged list; the request is answered.
func TestTodos(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.avenor(nil, "--prompt", "TODOS")
	if r.exit != 0 || r.final() != "TODOS" {
		t.Fatalf("exit %d, final %q, stderr %s", r.exit, r.final(), r.stderr)
	}
	plans := r.of("session.plan")
	if len(plans) != 2 {
		t.Fatalf("session.plan events %v", plans)
	}
	entries, _ := plans[1]["entries"].([]any)
	if len(entries) != 2 || entries[0].(map[string]any)["status"] != "completed" {
		t.Errorf("merged plan %v", plans[1])
	}
}

// --model through Cursor's model config option; an unknown model is the
// user's error.
func TestModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.avenor(nil, "--prompt", "hi", "--model", "sonnet-4", "--agent", "ask")
	if r.exit != 0 {
		t.Fatalf("exit %d, stderr %s", r.exit, r.stderr)
	}
	var set []string
	for _, m := range e.agentLog() {
		if m["method"] == "session/set_config_option" {
			p, _ := m["params"].(map[string]any)
			set = append(set, p["configId"].(string)+"="+p["value"].(string))
		}
	}
	if strings.Join(set, ",") != "mode=ask,model=sonnet-4" {
		t.Errorf("config options set: %v", set)
	}
	bad := e.avenor(nil, "--prompt", "hi", "--model", "nosuch")
	if bad.exit != 1 || !strings.Contains(bad.stderr, `refused model "nosuch"`) {
		t.Errorf("unknown model: exit %d, stderr %s", bad.exit, bad.stderr)
	}
}

// Failures are clear errors naming the binary, never hangs.
func TestFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(e *env)
		want  string
	}{
		{name: "not installed", setup: func(e *env) { e.path = "/usr/bin:/bin" }, want: `the runtime CLI "agent" was not found in PATH; install Cursor's CLI`},
		{name: "not logged in", setup: func(e *env) { e.extra = append(e.extra, "FAKEACP_FAIL=no-auth") },
			want: `authentication with "cursor_login" failed: Authentication required`},
		{name: "exits during initialize", setup: func(e *env) { e.extra = append(e.extra, "FAKEACP_FAIL=exit-on-init") },
			want: "agent exited during initialize (exit status 2); is it a version with ACP support?"},
		{name: "does not speak ACP", setup: func(e *env) { e.extra = append(e.extra, "FAKEACP_FAIL=not-acp") },
			want: "agent wrote output that is not ACP"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			tc.setup(e)
			start := time.Now()
			r := e.avenor(nil, "--prompt", "hi")
			if r.exit != 1 || !strings.HasPrefix(r.sentinel, "FAILED") || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, sentinel %q, stderr:\n%s\nwant %q", r.exit, r.sentinel, r.stderr, tc.want)
			}
			if errs := r.of("avenor.error"); len(errs) == 0 || !strings.Contains(errs[0]["message"].(string), tc.want) {
				t.Errorf("avenor.error %v", errs)
			}
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}
