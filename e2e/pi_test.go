//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// piSpec is the pi coding agent (`@mariozechner/pi-coding-agent`), driven by
// the pi backend over `pi --mode rpc` (docs/backends.md#pi-plugin-pi), configured offline as
// real-runtimes.md says: models.json with a "fake" provider on the fake
// LLM's Chat Completions endpoint, and settings.json making it the default.
var piSpec = &runtimeSpec{
	name: "pi", backend: "pi", model: "fake-model",
	bin: func() string { return piBin },
	setup: func(w *world) {
		agentDir := filepath.Join(w.home, ".pi", "agent")
		model := func(id string, reasoning bool) map[string]any {
			return map[string]any{"id": id, "name": id, "reasoning": reasoning, "contextWindow": 100000, "maxTokens": 8000}
		}
		models := map[string]any{"providers": map[string]any{"fake": map[string]any{
			"baseUrl": w.llm.OpenAIBaseURL(), "api": "openai-completions", "apiKey": "FAKE_API_KEY",
			"compat": map[string]any{"supportsDeveloperRole": false, "supportsReasoningEffort": true},
			"models": []any{model("fake-model", false), model("fake-reasoner", true)},
		}}}
		b, _ := json.MarshalIndent(models, "", "  ")
		w.writeFile(filepath.Join(agentDir, "models.json"), string(b))
		w.writeFile(filepath.Join(agentDir, "settings.json"), `{"defaultProvider":"fake","defaultModel":"fake-model"}`)
		w.env = append(w.env, "PI_CODING_AGENT_DIR="+agentDir, "PI_OFFLINE=1", "FAKE_API_KEY=fake-key",
			"AVENOR_PI_BIN="+piBin, "PATH="+filepath.Dir(piBin)+":"+bins.nodeDir+":/usr/bin:/bin")
	},
}

// piBin is the pi CLI: AVENOR_E2E_PI, or what e2e/install.sh installs (cached).
var piBin string

// piOnce installs pi (e2e/install.sh, cached) unless AVENOR_E2E_PI names it.
var piOnce sync.Once

func needPi(t *testing.T) {
	t.Helper()
	piOnce.Do(func() {
		piBin = os.Getenv("AVENOR_E2E_PI")
		if piBin != "" {
			return
		}
		out, err := exec.Command("./install.sh").Output()
		if err != nil {
			t.Logf("install.sh: %v", err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if k, v, _ := strings.Cut(line, "="); k == "AVENOR_E2E_PI" {
				piBin = v
			}
		}
	})
	if piBin == "" {
		t.Fatal("no pi CLI: set AVENOR_E2E_PI or fix e2e/install.sh")
	}
	if _, err := os.Stat(filepath.Join(bins.dir, "avenor-plugin-pi")); err != nil {
		t.Fatalf("avenor-plugin-pi is not built (make build): %v", err)
	}
}

// TestPi drives the built avenor with --backend pi against the real pi CLI.
func TestPi(t *testing.T) {
	needPi(t)
	t.Run("allow", func(t *testing.T) {
		testPermissionFile(t, piSpec, "allow")
	})
	t.Run("reject", testPiReject)
	t.Run("cancel", func(t *testing.T) { testCancel(t, piSpec) })
	t.Run("resume", func(t *testing.T) { testResume(t, piSpec) })
	t.Run("resume/session_dir", testPiSessionDir)
	t.Run("thinking", testPiThinking)
	t.Run("gate_off", testPiGateOff)
}

// testPiReject: the gate blocks the tool; pi reports "Denied by user" as the
// tool's error result (tool.call_update failed) and calls the model again,
// which answers DONE, so the turn ends end_turn with no file written
// (real-runtimes.md). The answer goes through the file protocol.
func testPiReject(t *testing.T) {
	w := newWorld(t, piSpec, fakellm.Config{})
	run := w.startAvenor("run", "--prompt", shellPrompt)
	reqPath := run.permBase + ".req"
	if !waitFor(2*time.Minute, func() bool { return fileExists(reqPath) || run.p.ended() }) || !fileExists(reqPath) {
		t.Fatalf("no %s was written\n%v", reqPath, run.p.wait())
	}
	b, _ := os.ReadFile(reqPath)
	var req permissionFile
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatalf("%s: %v", reqPath, err)
	}
	answer := exec.Command(bins.avenor, "answer", "--option", "Deny", run.permBase)
	answer.Env = w.env
	if out, err := answer.CombinedOutput(); err != nil {
		t.Fatalf("avenor answer --option Deny: %v\n%s", err, out)
	}
	res, evs, s := run.finish()
	checkDone(t, "run", res, evs, s)
	checkPermission(t, "run", evs, "reject", "file")
	checkOutFile(t, w, false)
	p := only(evs, "permission.request")[0]
	if p.str("tool") != "bash" || p.str("kind") != "command" || p.str("ui_request_id") == "" || !strings.Contains(p.str("input"), fakellm.DefaultCommand) {
		t.Errorf("permission.request lacks pi's fields (tool bash, kind command, ui_request_id, input): %v", p)
	}
	failed := false
	for _, u := range only(evs, "tool.call_update") {
		failed = failed || (u.str("status") == "failed" && strings.Contains(fmt.Sprint(u["rawOutput"]), "Denied by user"))
	}
	if !failed {
		t.Errorf("no tool.call_update failed with \"Denied by user\": %v", only(evs, "tool.call_update"))
	}
	main := w.llm.MainRequests()
	if len(main) != 2 || !main[1].Contains("Denied by user") {
		t.Errorf("after the reject pi should call the model again with the denial as the tool result: %d requests", len(main))
	}
	if got := finalText(evs); !strings.Contains(got, "DONE") {
		t.Errorf("final text %q, want DONE", got)
	}
	end := evs[len(evs)-1]
	if n, _ := end["unknown_frames"].(float64); n != 0 || end["runtime_version"] != "0.73.1" {
		t.Errorf("session.end unknown_frames %v runtime_version %v, want 0 and 0.73.1: %v", end["unknown_frames"], end["runtime_version"], only(evs, "avenor.native"))
	}
	t.Logf("events: %v", names(evs))
}

// testPiThinking: --thinking high reaches the model as reasoning_effort on a
// reasoning model, and session.end reports the pi version and no unknown
// frames.
func testPiThinking(t *testing.T) {
	w := newWorld(t, piSpec, fakellm.Config{Script: func(*fakellm.Request) fakellm.Reply { return fakellm.Text("THOUGHT") }})
	run := w.startAvenor("run", "--prompt", "Think, then say THOUGHT.", "--auto-approve",
		"--model", "fake-reasoner", "--thinking", "high")
	res, evs, s := run.finish()
	checkDone(t, "run", res, evs, s)
	main := w.llm.MainRequests()
	if len(main) == 0 {
		t.Fatal("no model request")
	}
	if got := main[0].Body["reasoning_effort"]; got != "high" {
		t.Errorf("--thinking high: the model request's reasoning_effort is %v, want high; body keys: %v", got, keys(main[0].Body))
	}
	end := checkSessionEnd(t, "run", evs, "end_turn")
	t.Logf("session.end: unknown_frames=%v runtime_version=%v", end["unknown_frames"], end["runtime_version"])
	if end["runtime_version"] != "0.73.1" {
		t.Errorf("session.end runtime_version %v, want 0.73.1", end["runtime_version"])
	}
	if n, _ := end["unknown_frames"].(float64); n != 0 {
		t.Errorf("session.end unknown_frames %v: pi sent frames the plugin does not know: %v", n, only(evs, "avenor.native"))
	}
}

// testPiGateOff: with options.permission_gate = false pi runs the tool
// unasked, as plain pi does.
func testPiGateOff(t *testing.T) {
	w := newWorld(t, piSpec, fakellm.Config{})
	w.writeFile(filepath.Join(w.work, ".avenor", "config.toml"), "[backends.pi]\noptions.permission_gate = false\n")
	run := w.startAvenor("run", "--prompt", shellPrompt)
	res, evs, s := run.finish()
	checkDone(t, "run", res, evs, s)
	if n := len(only(evs, "permission.request")); n != 0 {
		t.Errorf("%d permission requests with the gate off", n)
	}
	checkOutFile(t, w, true)
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// testPiSessionDir pins where pi keeps its sessions, a deliberate
// difference from the original (docs/backends.md#pi-plugin-pi):
// pi runs with --session-dir under the plugin's state directory and without
// --no-session, so its session file outlives the process, lies there and
// nowhere else, and a second avenor process resumes it.
func testPiSessionDir(t *testing.T) {
	w := newWorld(t, piSpec, fakellm.Config{})
	// pi renames its process to "pi", hiding its arguments from
	// /proc/<pid>/cmdline, so a wrapper records how the plugin launched it.
	argsLog := w.path("pi-args.log")
	wrapper := w.path("pi-wrapper.sh")
	w.writeFile(wrapper, "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '"+argsLog+"'\nexec '"+piBin+"' \"$@\"\n")
	if err := os.Chmod(wrapper, 0o755); err != nil {
		t.Fatal(err)
	}
	w.env = append(w.env, "AVENOR_PI_BIN="+wrapper)
	run1 := w.startAvenor("run1", "--prompt", shellPrompt, "--auto-approve")
	res, evs, s1 := run1.finish()
	checkDone(t, "run1", res, evs, s1)
	if s1.session == "" {
		t.Fatal("run1: no session id")
	}
	sessions := filepath.Join(w.state, "avenor", "plugins", "pi", "sessions")
	logged, _ := os.ReadFile(argsLog)
	var launch string
	for _, line := range strings.Split(string(logged), "\n") {
		if strings.HasPrefix(line, "--mode rpc") {
			launch = line
		}
	}
	if launch == "" {
		t.Fatalf("run1: the plugin never launched `pi --mode rpc`; the wrapper saw:\n%s", logged)
	}
	t.Logf("pi was launched as: pi %s", launch)
	if !strings.Contains(launch, "--session-dir "+sessions+" ") || strings.Contains(launch, "--no-session") {
		t.Errorf("pi launched as %q, want --session-dir %s and no --no-session", launch, sessions)
	}
	files, _ := filepath.Glob(filepath.Join(sessions, "*"+s1.session+"*.jsonl"))
	if len(files) != 1 {
		entries, _ := os.ReadDir(sessions)
		t.Fatalf("session %s: %d files in %s, want 1 (%v)", s1.session, len(files), sessions, entries)
	}
	// pi's own default, $PI_CODING_AGENT_DIR/sessions, stays empty: the
	// session lives only where avenor looks for it.
	if entries, err := os.ReadDir(filepath.Join(w.home, ".pi", "agent", "sessions")); err == nil && len(entries) > 0 {
		t.Errorf("pi also wrote sessions to its default directory: %v", entries)
	}

	w.llm.Reset()
	w.llm.SetScript(func(r *fakellm.Request) fakellm.Reply {
		if r.Contains(shellPrompt) && strings.Contains(r.LastUserText(), "second turn") {
			return fakellm.Text("SECOND DONE")
		}
		return fakellm.Fail(400, "fakellm: the resumed turn does not carry the first turn and the second prompt")
	})
	run2 := w.startAvenor("run2", "--resume", s1.session, "--prompt", "This is the second turn: say what you did.", "--auto-approve")
	res, evs, s2 := run2.finish()
	checkDone(t, "run2", res, evs, s2)
	if s2.session != s1.session || !strings.Contains(finalText(evs), "SECOND DONE") {
		t.Errorf("run2: session %q, final text %q; want the resumed %q and SECOND DONE", s2.session, finalText(evs), s1.session)
	}
}
