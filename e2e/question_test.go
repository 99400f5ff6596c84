//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/e2e/fakellm"
)

// askThenText is a script whose model first calls the runtime's ask-user
// tool with args, then, once the tool result (the user's answer) is back,
// answers "DONE".
func askThenText(tool string, args map[string]any) fakellm.Script {
	return func(r *fakellm.Request) fakellm.Reply {
		if r.AfterToolResult() {
			return fakellm.Text("DONE")
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_ask_1", Name: tool, Args: args}}}
	}
}

// answerQuestion waits for the run's question.request, checks its
// prompt, and answers it through door: "control" (the control socket at
// sock) or "board" (avenor board over that socket, its HTTP API).
func answerQuestion(t *testing.T, w *world, run *avenorRun, sock, door string, wantQuestion string, answers [][]string) event {
	t.Helper()
	var q []event
	if !waitFor(2*time.Minute, func() bool {
		if b, err := os.ReadFile(run.events); err == nil && strings.Contains(string(b), `"question.request"`) {
			q = only(readEvents(t, run.events), "question.request")
		}
		return len(q) > 0 || run.p.ended()
	}) || len(q) == 0 {
		t.Fatalf("no question.request\n%v", run.p.wait())
	}
	b, _ := json.Marshal(q[0]["prompts"])
	if !strings.Contains(string(b), wantQuestion) {
		t.Errorf("question.request prompts %s, want one asking %q", b, wantQuestion)
	}
	if door == "board" {
		answerOnBoard(t, w, sock, q[0].str("request_id"), answers)
		return q[0]
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.AnswerQuestion(ctx, "", q[0].str("request_id"), answers); err != nil {
		t.Fatalf("answer_question: %v", err)
	}
	return q[0]
}

// answerOnBoard starts avenor board on sock with mutations allowed and
// answers the question there, as a person on the page would.
func answerOnBoard(t *testing.T, w *world, sock, requestID string, answers [][]string) {
	t.Helper()
	const token = "e2e-board-token"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.avenor, "board", "--no-open", "--allow-mutations", "--socket", sock, "--token", token)
	cmd.Env = w.env
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "avenor board: serving ")
	if err != nil || !ok {
		t.Fatalf("avenor board said %q: %v", line, err)
	}
	base, _, _ := strings.Cut(url, "/board/")
	body, _ := json.Marshal(map[string]any{"socket": sock, "request_id": requestID, "answers": answers})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/answer-question", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /api/answer-question: %d %s", resp.StatusCode, b)
	}
}

// TestCodexQuestion: the model calls Codex's request_user_input tool; the
// codex-app-server backend relays it as question.request, the answer given
// over the control socket or on the board reaches the model as the tool's result, and the
// turn ends normally.
func TestCodexQuestion(t *testing.T) {
	codex.bin = func() string { return codexBin(t) }
	for _, door := range []string{"control", "board"} {
		t.Run(door, func(t *testing.T) { testCodexQuestion(t, door) })
	}
}

func testCodexQuestion(t *testing.T, door string) {
	w := newWorld(t, codex, fakellm.Config{Script: askThenText("request_user_input", map[string]any{
		"questions": []any{map[string]any{
			"id": "colour", "header": "Colour", "question": "Which colour should the button be?",
			"options": []any{
				map[string]any{"label": "Blue (Recommended)", "description": "calm"},
				map[string]any{"label": "Red", "description": "loud"},
			},
		}},
	})})
	// Codex 0.171 offers request_user_input outside plan mode only with
	// this feature on ("request_user_input is unavailable in Default mode").
	cfg := filepath.Join(w.path("codex-home"), "config.toml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.writeFile(cfg, string(b)+"[features]\ndefault_mode_request_user_input = true\n")
	sock := filepath.Join(w.tmp, "q.sock")
	run := w.startAvenor("run", "--prompt", "Ask me which colour the button should be.", "--control-socket", sock, "--questions")
	t.Cleanup(func() {
		if main := w.llm.MainRequests(); t.Failed() && len(main) > 1 && main[len(main)-1].AfterToolResult() {
			t.Logf("codex told the model: %q", main[len(main)-1].LastMessage().ToolResults[0].Output)
		}
	})
	answerQuestion(t, w, run, sock, door, "Which colour should the button be?", [][]string{{"Red"}})
	res, evs, s := run.finish()
	checkDone(t, "run", res, evs, s)
	resp := only(evs, "question.response")
	if len(resp) != 1 || resp[0]["answered"] != true || resp[0].str("source") != door {
		t.Errorf("question.response %v", resp)
	}
	main := w.llm.MainRequests()
	if len(main) < 2 || !main[len(main)-1].AfterToolResult() {
		t.Fatalf("%d model requests: want the ask, then the model again with the answer", len(main))
	}
	out := main[len(main)-1].LastMessage().ToolResults[0].Output
	t.Logf("codex told the model: %q", out)
	if !strings.Contains(out, "Red") {
		t.Errorf("the answer did not reach the model: %q", out)
	}
}

// TestClaudeQuestion: the model calls Claude Code's AskUserQuestion; the
// claude-stream backend relays the CLI's can_use_tool for it as
// question.request (not a permission), the answer given over the control
// socket or on the board goes back as the tool's answers, and the model sees it.
func TestClaudeQuestion(t *testing.T) {
	installClaude(t)
	for _, door := range []string{"control", "board"} {
		t.Run(door, func(t *testing.T) { testClaudeQuestion(t, door) })
	}
}

func testClaudeQuestion(t *testing.T, door string) {
	w := newWorld(t, claudeStream, fakellm.Config{Script: askThenText("AskUserQuestion", map[string]any{
		"questions": []any{map[string]any{
			"question": "Which colour should the button be?", "header": "Colour", "multiSelect": false,
			"options": []any{
				map[string]any{"label": "Blue", "description": "calm"},
				map[string]any{"label": "Red", "description": "loud"},
			},
		}},
	})})
	sock := filepath.Join(w.tmp, "q.sock")
	run := w.startAvenor("run", "--prompt", "Ask me which colour the button should be.", "--control-socket", sock, "--questions")
	t.Cleanup(func() {
		if main := w.llm.MainRequests(); t.Failed() && len(main) > 1 && main[len(main)-1].AfterToolResult() {
			t.Logf("claude told the model: %q", main[len(main)-1].LastMessage().ToolResults[0].Output)
		}
	})
	answerQuestion(t, w, run, sock, door, "Which colour should the button be?", [][]string{{"Red"}})
	res, evs, s := run.finish()
	checkDone(t, "run", res, evs, s)
	if perms := only(evs, "permission.request"); len(perms) != 0 {
		t.Errorf("AskUserQuestion was also a permission request: %v", perms)
	}
	resp := only(evs, "question.response")
	if len(resp) != 1 || resp[0]["answered"] != true || resp[0].str("source") != door {
		t.Errorf("question.response %v", resp)
	}
	main := w.llm.MainRequests()
	if len(main) < 2 || !main[len(main)-1].AfterToolResult() {
		t.Fatalf("%d model requests: want the ask, then the model again with the answer", len(main))
	}
	out := main[len(main)-1].LastMessage().ToolResults[0].Output
	t.Logf("claude told the model: %q", out)
	if !strings.Contains(out, "Red") {
		t.Errorf("the answer did not reach the model: %q", out)
	}
}

// pngFile writes a small valid PNG (1x1) and returns its path and its
// base64, as a provider request carries it.
func pngFile(t *testing.T, dir string) (string, string) {
	t.Helper()
	const b64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "dot.png")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p, b64
}

// TestImages: --image reaches the model through the runtime's own image
// input — Codex's localImage, Claude Code's image block — as the image's
// bytes in the provider request.
func TestImages(t *testing.T) {
	installClaude(t)
	codex.bin = func() string { return codexBin(t) }
	for _, rt := range []*runtimeSpec{codex, claudeStream} {
		t.Run(rt.backend, func(t *testing.T) {
			w := newWorld(t, rt, fakellm.Config{Script: func(*fakellm.Request) fakellm.Reply { return fakellm.Text("DONE") }})
			png, b64 := pngFile(t, w.tmp)
			run := w.startAvenor("run", "--prompt", "What is in this picture?", "--image", png)
			res, evs, s := run.finish()
			checkDone(t, "run", res, evs, s)
			main := w.llm.MainRequests()
			if len(main) == 0 {
				t.Fatal("no model request")
			}
			body, _ := json.Marshal(main[0].Body)
			if !strings.Contains(string(body), b64[:40]) {
				t.Errorf("the image's bytes are not in the model request:\n%s", tail(string(body), 3000))
			}
		})
	}
}
