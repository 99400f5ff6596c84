//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// claudeSpec is the install.sh entry for Claude Code (real-runtimes.md).
const claudeSpec = "AVENOR_E2E_CLAUDE=@anthropic-ai/claude-code@2.1.332:claude"

// fakeAnthropicKey is a key of the shape Claude Code accepts; its last 20
// characters are pre-approved in ~/.claude.json so no dialog asks.
const fakeAnthropicKey = "sk-ant-fake-key-0123456789abcdefghij"

// claudeStream is Claude Code 2.1.332 driven by the claude-stream backend,
// offline against the fake Anthropic Messages API, in an isolated HOME
// pre-seeded so that no onboarding or trust dialog appears.
var claudeStream = &runtimeSpec{
	name: "claude", backend: "claude-stream", model: "claude-sonnet-4-5",
	bin: func() string { return claudeBin },
	setup: func(w *world) {
		seed := map[string]any{
			"hasCompletedOnboarding": true, "theme": "dark",
			"customApiKeyResponses": map[string]any{"approved": []string{fakeAnthropicKey[len(fakeAnthropicKey)-20:]}, "rejected": []string{}},
			"projects":              map[string]any{w.work: map[string]any{"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}},
		}
		b, _ := json.MarshalIndent(seed, "", "  ")
		w.writeFile(filepath.Join(w.home, ".claude.json"), string(b))
		path := ""
		for _, kv := range w.env {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				path = v
			}
		}
		w.env = append(w.env,
			"PATH="+filepath.Dir(claudeBin)+":"+path,
			"ANTHROPIC_BASE_URL="+w.llm.URL, // no /v1
			"ANTHROPIC_API_KEY="+fakeAnthropicKey,
			"ANTHROPIC_MODEL=claude-sonnet-4-5", "ANTHROPIC_SMALL_FAST_MODEL=claude-haiku-4-5",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
			"DISABLE_ERROR_REPORTING=1", "DISABLE_BUG_COMMAND=1")
	},
}

// claudeBin is the installed claude: AVENOR_E2E_CLAUDE, else install.sh.
var claudeBin string

// installClaude finds or installs Claude Code; skipped (loudly) only when
// the npm registry is unreachable.
func installClaude(t *testing.T) {
	t.Helper()
	if claudeBin = os.Getenv("AVENOR_E2E_CLAUDE"); claudeBin != "" {
		return
	}
	cmd := exec.Command("./install.sh", claudeSpec)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		t.Skip(skipBanner("the npm registry is unreachable; Claude Code is not installed"))
	}
	if err != nil {
		t.Fatalf("install.sh %s: %v", claudeSpec, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "AVENOR_E2E_CLAUDE="); ok {
			claudeBin = v
		}
	}
	if claudeBin == "" {
		t.Fatalf("install.sh printed no claude path:\n%s", out)
	}
}

// TestClaude drives the built avenor with --backend claude-stream through
// the harness scenarios: allow (auto-approve and the permission file),
// reject, cancel (SIGINT: exit 130, KILLED, nothing left running) and resume
// in a second avenor run; then --backend claude (the TUI in a PTY): allow,
// the permission dialog answered both ways, cancel, and the delay between
// the transcript's final message and session.end.
func TestClaude(t *testing.T) {
	rt := claudeStream
	if _, err := os.Stat(filepath.Join(bins.dir, "avenor-plugin-"+rt.name)); err != nil {
		t.Fatalf("the %s plugin is not built: %v", rt.backend, err)
	}
	installClaude(t)
	t.Run(rt.backend, func(t *testing.T) {
		t.Run("allow/auto-approve", func(t *testing.T) { testAllowAuto(t, rt) })
		t.Run("allow/permission-file", func(t *testing.T) { testPermissionFile(t, rt, "allow") })
		t.Run("reject/permission-file", func(t *testing.T) { testPermissionFile(t, rt, "reject") })
		t.Run("cancel", func(t *testing.T) { testCancel(t, rt) })
		t.Run("resume", func(t *testing.T) { testResume(t, rt) })
		t.Run("model-and-thinking", func(t *testing.T) { testClaudeModel(t, rt) })
		t.Run("session-end-extras", func(t *testing.T) { testClaudeEndExtras(t, rt) })
	})
	pty := *rt
	pty.backend = "claude"
	t.Run(pty.backend, func(t *testing.T) {
		t.Run("allow/auto-approve", func(t *testing.T) { testAllowAuto(t, &pty); testPTYEndDelay(t, &pty) })
		t.Run("allow/permission-file", func(t *testing.T) { testPermissionFile(t, &pty, "allow") })
		t.Run("reject/permission-file", func(t *testing.T) { testPermissionFile(t, &pty, "reject") })
		t.Run("cancel", func(t *testing.T) { testPTYCancel(t, &pty) })
	})
}

// testClaudeEndExtras checks what claude-stream adds to session.end:
// usage and cost from the result, status, the runtime version and the
// count of frames without a mapping.
func testClaudeEndExtras(t *testing.T, rt *runtimeSpec) {
	w := newWorld(t, rt, fakellm.Config{})
	run := w.startAvenor("run", "--prompt", shellPrompt, "--auto-approve")
	res, evs, s := run.finish()
	checkDone(t, "run", res, evs, s)
	end := checkSessionEnd(t, "run", evs, "end_turn")
	if end == nil {
		return
	}
	if end.str("status") != "done" || end.str("runtime_version") != "2.1.332" {
		t.Errorf("session.end status %q runtime_version %q, want done and 2.1.332: %v", end.str("status"), end.str("runtime_version"), end)
	}
	if _, ok := end["unknown_frames"].(float64); !ok {
		t.Errorf("session.end lacks unknown_frames: %v", end)
	}
	if c, _ := end["cost_usd"].(float64); c <= 0 {
		t.Errorf("session.end cost_usd %v, want the result's total_cost_usd: %v", end["cost_usd"], end)
	}
	u, _ := end["usage"].(map[string]any)
	if in, _ := u["input_tokens"].(float64); in <= 0 {
		t.Errorf("session.end usage %v, want input tokens from the result", u)
	}
	if got := fmt.Sprint(end["final_output"]); got != "DONE" {
		t.Errorf("final_output %q, want DONE", got)
	}
}

// testClaudeModel checks that --model reaches the model requests and that
// --thinking (Claude's --effort) is accepted by the real CLI.
func testClaudeModel(t *testing.T, rt *runtimeSpec) {
	w := newWorld(t, rt, fakellm.Config{})
	const model = "claude-haiku-4-5" // older ids are mapped (claude-opus-4-1 asks for claude-opus-5-5)
	run := w.startAvenor("run", "--prompt", shellPrompt, "--auto-approve", "--model", model, "--thinking", "high")
	res, evs, s := run.finish()
	checkDone(t, "run", res, evs, s)
	main := w.llm.MainRequests()
	if len(main) == 0 {
		t.Fatal("no model request")
	}
	for _, r := range main {
		if r.Model != model {
			t.Errorf("--model %s: request #%d asked for model %q", model, r.Seq, r.Model)
		}
	}
}

// testPTYCancel interrupts avenor (SIGINT) while the TUI waits for a slow
// model stream: exit 130, a KILLED sentinel, session.end{cancelled} and
// nothing left running. (The transcript shows no text until the stream
// ends, so the test waits for the model request, not for a chunk.)
func testPTYCancel(t *testing.T, rt *runtimeSpec) {
	w := newWorld(t, rt, fakellm.Config{Script: func(*fakellm.Request) fakellm.Reply {
		return fakellm.Slow(1200, 100*time.Millisecond)
	}})
	run := w.startAvenor("run", "--prompt", "Count slowly to a thousand.", "--auto-approve")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if !w.llm.Wait(ctx, func(rs []*fakellm.Request) bool { return len(rs) > 0 }) {
		t.Fatalf("no model request within 2 min\n%v", run.p.wait())
	}
	time.Sleep(500 * time.Millisecond)
	sent := time.Now()
	if err := run.p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	res, evs, s := run.finish()
	t.Logf("avenor exited %v after SIGINT", time.Since(sent).Round(time.Millisecond))
	if res.code != 130 {
		t.Errorf("exit code %d, want 130\n%v", res.code, res)
	}
	if s.status != "KILLED" || s.fields["EXIT_CODE"] != "130" {
		t.Errorf("sentinel %q, want KILLED, EXIT_CODE=130", s.raw)
	}
	if end := evs[len(evs)-1]; end.name() != "session.end" || !strings.HasPrefix(end.str("stop_reason"), "cancelled") {
		t.Errorf("last event %v, want session.end cancelled or cancelled_forced", end)
	}
}

// testPTYEndDelay measures, for the last run of the world, the delay
// between the transcript's final assistant record and avenor's session.end
// (the closing note asks for it).
func testPTYEndDelay(t *testing.T, rt *runtimeSpec) {
	t.Helper()
	w := newWorld(t, rt, fakellm.Config{})
	run := w.startAvenor("delay", "--prompt", shellPrompt, "--auto-approve")
	res, evs, s := run.finish()
	checkDone(t, "delay", res, evs, s)
	files, _ := filepath.Glob(filepath.Join(w.home, ".claude", "projects", "*", s.session+".jsonl"))
	if len(files) != 1 {
		t.Fatalf("transcript of session %s not found under %s", s.session, w.home)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for _, line := range strings.Split(string(data), "\n") {
		var r struct {
			Type      string    `json:"type"`
			Timestamp time.Time `json:"timestamp"`
		}
		if json.Unmarshal([]byte(line), &r) == nil && r.Type == "assistant" {
			last = r.Timestamp
		}
	}
	endMS, _ := evs[len(evs)-1]["ts"].(float64)
	if last.IsZero() || endMS == 0 {
		t.Fatalf("no final assistant record (%v) or session.end ts (%v)", last, endMS)
	}
	delay := time.UnixMilli(int64(endMS)).Sub(last)
	t.Logf("claude (PTY): transcript final message → session.end: %v", delay.Round(time.Millisecond))
	if delay > 10*time.Second {
		t.Errorf("session.end came %v after the transcript's final message", delay)
	}
}
