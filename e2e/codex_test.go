//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// codexCLI is the codex CLI from install.sh (AVENOR_E2E_CODEX), found once.
var codexCLI struct {
	once sync.Once
	path string
	err  string
}

func codexBin(t *testing.T) string {
	t.Helper()
	codexCLI.once.Do(func() {
		if p := os.Getenv("AVENOR_E2E_CODEX"); p != "" {
			codexCLI.path = p
			return
		}
		cmd := exec.Command("./install.sh")
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			codexCLI.err = "install.sh: " + err.Error()
			return
		}
		for _, line := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(line, "AVENOR_E2E_CODEX="); ok {
				codexCLI.path = v
			}
		}
		if codexCLI.path == "" {
			codexCLI.err = "install.sh printed no AVENOR_E2E_CODEX"
		}
	})
	if codexCLI.path == "" {
		t.Fatalf("no codex CLI: %s", codexCLI.err)
	}
	return codexCLI.path
}

// codex is Codex CLI driven by codex-app-server, offline against the fake
// LLM's Responses API (real-runtimes.md, "codex"): its own CODEX_HOME with
// a config.toml naming the fake provider. The plugin finds the CLI through
// AVENOR_CODEX_BIN; the approval policy ("untrusted") comes from the
// plugin's thread/start, never from config.toml (0.171 refuses it there).
var codex = &runtimeSpec{
	name: "codex", backend: "codex-app-server", model: "fake-model",
	setup: func(w *world) {
		home := w.path("codex-home")
		w.writeFile(filepath.Join(home, "config.toml"), `model = "fake-model"
model_provider = "fake"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
[model_providers.fake]
name = "Fake LLM"
base_url = "`+w.llm.OpenAIBaseURL()+`"
env_key = "FAKE_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
[analytics]
enabled = false
[feedback]
enabled = false
`)
		w.env = append(w.env, "CODEX_HOME="+home, "FAKE_API_KEY=fake-key", "AVENOR_CODEX_BIN="+codexBin(w.t))
	},
}

// TestCodex drives the built avenor with --backend codex-app-server and the
// real codex CLI through the harness scenarios.
func TestCodex(t *testing.T) {
	codex.bin = func() string { return codexBin(t) }
	if _, err := os.Stat(filepath.Join(bins.dir, "avenor-plugin-codex")); err != nil {
		t.Fatalf("the codex plugin is not built: %v", err)
	}
	t.Run("allow/auto-approve", func(t *testing.T) { testAllowAuto(t, codex) })
	t.Run("allow/permission-file", func(t *testing.T) { testPermissionFile(t, codex, "allow") })
	t.Run("reject/permission-file", func(t *testing.T) { testPermissionFile(t, codex, "reject") })
	t.Run("reject/what-codex-does", testCodexReject)
	t.Run("cancel", func(t *testing.T) { testCancel(t, codex) })
	t.Run("resume", func(t *testing.T) { testResume(t, codex) })
	t.Run("thinking", testCodexThinking)
}

// testCodexReject answers "decline" and checks what codex 0.171 really
// does after it: the command is not run, its item completes "declined"
// (tool.call_update failed), the model is called again with the refusal as
// the tool result, and the turn completes normally (end_turn, "DONE").
func testCodexReject(t *testing.T) {
	w := newWorld(t, codex, fakellm.Config{})
	run := w.startAvenor("run", "--prompt", shellPrompt)
	reqPath := run.permBase + ".req"
	if !waitFor(2*time.Minute, func() bool { return fileExists(reqPath) || run.p.ended() }) || !fileExists(reqPath) {
		t.Fatalf("no %s was written\n%v", reqPath, run.p.wait())
	}
	answer := exec.Command(bins.avenor, "answer", "--option", "decline", run.permBase)
	answer.Env = w.env
	if out, err := answer.CombinedOutput(); err != nil {
		t.Fatalf("avenor answer --option decline: %v\n%s", err, out)
	}
	res, evs, s := run.finish()
	checkDone(t, "run", res, evs, s)
	checkPermission(t, "run", evs, "reject", "file")
	checkOutFile(t, w, false)
	declined := false
	for _, ev := range only(evs, "tool.call_update") {
		declined = declined || (ev.str("status") == "failed" && ev.str("codex_status") == "declined")
	}
	if !declined {
		t.Errorf("no tool.call_update failed/declined: %v", names(evs))
	}
	main := w.llm.MainRequests()
	if len(main) != 2 || !main[1].AfterToolResult() {
		t.Fatalf("%d model requests, want 2: the tool call, then the model again with the refusal", len(main))
	}
	out := main[1].LastMessage().ToolResults[0].Output
	t.Logf("codex told the model after the decline: %q", out)
	if !strings.Contains(finalText(evs), "DONE") {
		t.Errorf("final text %q, want DONE", finalText(evs))
	}
	checkCodexEnd(t, evs)
}

// testCodexThinking runs --thinking high: the effort must reach the model
// request (Responses "reasoning.effort") or, where codex leaves reasoning
// out for a model it has no metadata for, at least the thread's persisted
// turn context in CODEX_HOME (what turn/start's effort set).
func testCodexThinking(t *testing.T) {
	w := newWorld(t, codex, fakellm.Config{})
	run := w.startAvenor("run", "--prompt", shellPrompt, "--auto-approve", "--thinking", "high")
	res, evs, s := run.finish()
	checkDone(t, "run", res, evs, s)
	checkCodexEnd(t, evs)
	main := w.llm.MainRequests()
	if len(main) == 0 {
		t.Fatal("no model request")
	}
	reasoning, _ := main[0].Body["reasoning"].(map[string]any)
	if reasoning != nil {
		if reasoning["effort"] != "high" {
			t.Errorf("model request reasoning = %v, want effort high", reasoning)
		}
		t.Logf("effort reached the fake LLM: reasoning = %v", reasoning)
		return
	}
	t.Logf("codex sent no reasoning settings to the model (fake-model has no metadata); looking in the rollout")
	found := false
	_ = filepath.Walk(filepath.Join(w.path("codex-home"), "sessions"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && strings.HasSuffix(p, ".jsonl") {
			b, _ := os.ReadFile(p)
			found = found || strings.Contains(string(b), `"effort":"high"`)
		}
		return nil
	})
	if !found {
		t.Errorf("effort high is neither in the model request nor in the rollout under $CODEX_HOME/sessions")
	}
}

// checkCodexEnd checks the protocol-drift fields of session.end
// and logs them for the closing note.
func checkCodexEnd(t *testing.T, evs []event) {
	t.Helper()
	end := evs[len(evs)-1]
	b, _ := json.Marshal(map[string]any{"unknown_frames": end["unknown_frames"], "runtime_version": end["runtime_version"]})
	t.Logf("session.end drift fields: %s", b)
	if end.str("runtime_version") == "" {
		t.Errorf("session.end has no runtime_version: %v", end)
	}
	if n, ok := end["unknown_frames"].(float64); !ok || n != 0 {
		var native []string
		for _, ev := range only(evs, "avenor.native") {
			b, _ := json.Marshal(ev["payload"])
			native = append(native, ev.str("native_type")+" "+tail(string(b), 400))
		}
		t.Errorf("session.end unknown_frames = %v, want 0 against the pinned codex; unmapped: %v", end["unknown_frames"], native)
	}
}
