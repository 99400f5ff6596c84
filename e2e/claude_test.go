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

	"github.com/avenor-go/avenor/client"
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
		t.Run("stable-follow-up", func(t *testing.T) { testPTYStableFollowUp(t, &pty) })
	})
	// The same TUI in a private tmux server (AVENOR_CLAUDE_TERMINAL=tmux).
	tmux := pty
	tmux.setup = func(w *world) {
		pty.setup(w)
		w.env = append(w.env, "AVENOR_CLAUDE_TERMINAL=tmux")
	}
	t.Run(pty.backend+"-tmux", func(t *testing.T) {
		if _, err := exec.LookPath("tmux"); err != nil {
			t.Fatalf("tmux is not installed (.ci/run installs it): %v", err)
		}
		t.Run("allow/auto-approve", func(t *testing.T) { testTmuxRun(t, &tmux) })
		t.Run("allow/permission-file", func(t *testing.T) { testPermissionFile(t, &tmux, "allow") })
		t.Run("reject/permission-file", func(t *testing.T) { testPermissionFile(t, &tmux, "reject") })
		t.Run("cancel", func(t *testing.T) { testPTYCancel(t, &tmux) })
		t.Run("stable-follow-up", func(t *testing.T) { testPTYStableFollowUp(t, &tmux) })
		t.Run("host-and-plugin-killed", func(t *testing.T) { testTmuxHostKilled(t, &tmux) })
	})
}

// testTmuxRun: one prompt through the TUI under tmux ends in session.end
// with the transcript's events, the delay from the transcript's final
// message to session.end is measured, and nothing of the private tmux
// server is left once avenor has exited.
func testTmuxRun(t *testing.T, rt *runtimeSpec) {
	w, evs := testPTYEndDelay(t, rt)
	if starts := only(evs, "session.start"); len(starts) != 1 || starts[0].str("terminal") != "tmux" {
		t.Errorf("session.start %v, want one with terminal tmux", starts)
	}
	if subs := only(evs, "agent.prompt_submitted"); len(subs) != 1 || subs[0].str("source") != "tmux" || subs[0].str("delivery") != "tmux" || subs[0]["prompt_length"] == nil {
		t.Errorf("agent.prompt_submitted %v, want one with source and delivery tmux and a prompt_length (docs/events.md#agentprompt_submitted)", subs)
	}
	for _, typ := range []string{"session.start", "agent.prompt_submitted", "tool.call", "tool.call_update", "agent.message_chunk"} {
		if len(only(evs, typ)) == 0 {
			t.Errorf("no %s event under tmux", typ)
		}
	}
	if !strings.Contains(finalText(evs), "DONE") {
		t.Errorf("final text %q, want DONE", finalText(evs))
	}
	checkOutFile(t, w, true)
	// The tmux server (its argv names the socket under the world's TMPDIR)
	// and claude must be gone.
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := processesNaming(w.tmp)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("processes still running after avenor exited: %v", left)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// processesNaming lists the command lines (from /proc) containing s.
func processesNaming(s string) []string {
	var found []string
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), s) {
			found = append(found, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
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
func testPTYEndDelay(t *testing.T, rt *runtimeSpec) (*world, []event) {
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
	t.Logf("%s: transcript final message → session.end: %v", t.Name(), delay.Round(time.Millisecond))
	if delay > 10*time.Second {
		t.Errorf("session.end came %v after the transcript's final message", delay)
	}
	return w, evs
}

// testPTYStableFollowUp: under `avenor stable` a parked claude runtime
// (resume scope in_process) keeps its plugin and TUI, and a follow-up
// prompt continues the same conversation in the same claude process: the
// model sees the first exchange in the second request. Then the kept
// plugin is SIGKILLed, and the next follow-up is refused as session lost
// rather than starting a new session.
func testPTYStableFollowUp(t *testing.T, rt *runtimeSpec) {
	w := newWorld(t, rt, fakellm.Config{Script: func(r *fakellm.Request) fakellm.Reply {
		if strings.Contains(r.LastUserText(), "second") {
			return fakellm.Text("SECOND")
		}
		return fakellm.Text("FIRST")
	}})
	sock := filepath.Join(w.tmp, "s.sock")
	sup := w.start("stable", "--control-socket", sock)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := dialStable(t, ctx, sock)
	defer c.Close()
	ended := func(id, what string, cond func(client.Runtime) bool) client.Runtime {
		t.Helper()
		return waitRuntime(t, ctx, c, id, what, func(r client.Runtime) bool { return (r.Parked || r.Status == "ended") && cond(r) })
	}
	sp, err := c.Spawn(ctx, client.SpawnParams{Backend: rt.backend, Dir: w.work, Prompt: "Say the first word.", AutoApprove: client.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	first := ended(sp.RuntimeID, "first turn", func(r client.Runtime) bool { return r.FinalOutput == "FIRST" })
	if !first.Parked || first.PluginPID == 0 || first.PID == 0 || !strings.Contains(string(first.Raw), `"resume_scope":"in_process"`) {
		t.Fatalf("parked with its plugin and TUI kept (resume scope in_process), got: %s", first.Raw)
	}
	if err := c.Prompt(ctx, "Now say the second word.", sp.RuntimeID); err != nil {
		t.Fatalf("follow-up: %v", err)
	}
	second := ended(sp.RuntimeID, "follow-up", func(r client.Runtime) bool { return r.FinalOutput == "SECOND" })
	if second.SessionID != first.SessionID || second.PID != first.PID || second.PluginPID != first.PluginPID {
		t.Errorf("the follow-up did not continue in the same TUI: first %s\nsecond %s", first.Raw, second.Raw)
	}
	var last *fakellm.Request
	for _, r := range w.llm.MainRequests() {
		last = r
	}
	if last == nil || !last.Contains("Say the first word.") || !last.Contains("FIRST") {
		t.Errorf("the follow-up's model request does not carry the first exchange: %+v", last)
	}

	if err := syscall.Kill(first.PluginPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ended(sp.RuntimeID, "plugin gone", func(r client.Runtime) bool { return r.PluginPID == 0 })
	err = c.Prompt(ctx, "A third word?", sp.RuntimeID)
	if err == nil || !strings.Contains(err.Error(), "session lost") || !strings.Contains(err.Error(), "in_process") {
		t.Errorf("follow-up after the plugin died: %v, want a session-lost refusal", err)
	}
	// The host kills the dead plugin's TUI process group (under tmux the
	// guardian does too).
	tuiGone := func() bool { _, _, state, ok := statOf(first.PID); return !ok || state == "Z" }
	for deadline := time.Now().Add(10 * time.Second); !tuiGone(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("claude (pid %d) still runs 10s after its plugin was SIGKILLed", first.PID)
			break
		}
	}
	if err := c.Shutdown(ctx, "graceful"); err != nil {
		t.Logf("shutdown: %v", err)
	}
	res := sup.wait()
	sup.checkNoLeftovers()
	if res.code != 0 {
		t.Logf("avenor stable: %v", res)
	}
}

// testTmuxHostKilled: avenor and its plugin are SIGKILLed mid-turn, so
// nobody kills claude's group; the tmux server would keep claude alive,
// but the plugin's guardian sees the plugin gone and kills claude and the
// server (a PTY needs no guardian: the kernel hangs up its terminal).
func testTmuxHostKilled(t *testing.T, rt *runtimeSpec) {
	w := newWorld(t, rt, fakellm.Config{Script: func(*fakellm.Request) fakellm.Reply {
		return fakellm.Slow(1200, 100*time.Millisecond)
	}})
	run := w.startAvenor("run", "--prompt", "Count slowly to a thousand.", "--auto-approve")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if !w.llm.Wait(ctx, func(rs []*fakellm.Request) bool { return len(rs) > 0 }) {
		t.Fatalf("no model request within 2 min\n%v", run.p.wait())
	}
	plugin := 0
	for id, cmdline := range descendants(run.p.cmd.Process.Pid) {
		if strings.Contains(cmdline, "avenor-plugin-claude") {
			plugin = id.pid
		}
	}
	if plugin == 0 || len(processesIn(w.work)) == 0 {
		t.Fatalf("plugin %d, processes in the work dir %v", plugin, processesIn(w.work))
	}
	killed := time.Now()
	_ = syscall.Kill(run.p.cmd.Process.Pid, syscall.SIGKILL)
	_ = syscall.Kill(plugin, syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := append(processesNaming(w.tmp), processesIn(w.work)...)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still running 10s after avenor and its plugin were SIGKILLed: %v", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("claude and its tmux server were gone %v after the SIGKILLs", time.Since(killed).Round(100*time.Millisecond))
}

// processesIn lists the processes whose working directory is dir.
func processesIn(dir string) []string {
	var found []string
	links, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil && target == dir {
			cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(l), "cmdline"))
			found = append(found, strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}
