//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

const shellPrompt = "Create out.txt containing hello using the shell."

// TestDirect drives each CLI over ACP without avenor: it proves the fake
// LLM and the offline configuration on their own (allow, reject, cancel).
func TestDirect(t *testing.T) {
	for _, rt := range runtimes {
		t.Run(rt.name, func(t *testing.T) {
			t.Run("allow", func(t *testing.T) {
				w := newWorld(t, rt, fakellm.Config{})
				a := startACP(w, pickKind("allow_once"))
				stop := directTurn(t, w, a, shellPrompt)
				if stop != "end_turn" {
					t.Errorf("stopReason %q, want end_turn", stop)
				}
				if got, err := os.ReadFile(filepath.Join(w.work, "out.txt")); err != nil || string(got) != "hello\n" {
					t.Errorf("out.txt = %q, %v; want \"hello\\n\"\n%s", got, err, a.transcript())
				}
				if a.permissionRequests() != 1 {
					t.Errorf("%d permission requests, want 1", a.permissionRequests())
				}
				checkModelRequests(t, w, rt.model)
			})
			t.Run("reject", func(t *testing.T) {
				w := newWorld(t, rt, fakellm.Config{})
				a := startACP(w, pickKind("reject"))
				if stop := directTurn(t, w, a, shellPrompt); stop != "end_turn" {
					t.Errorf("stopReason %q, want end_turn", stop)
				}
				if fileExists(filepath.Join(w.work, "out.txt")) {
					t.Errorf("out.txt exists after a reject")
				}
			})
			t.Run("resume", func(t *testing.T) { testDirectResume(t, rt) })
			t.Run("cancel", func(t *testing.T) {
				w := newWorld(t, rt, fakellm.Config{Script: func(*fakellm.Request) fakellm.Reply {
					return fakellm.Slow(600, 100*time.Millisecond)
				}})
				a := startACP(w, pickKind("allow_once"))
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				sid, err := a.newSession(ctx, w.work)
				if err != nil {
					t.Fatalf("%v\n%s", err, a.transcript())
				}
				type res struct {
					stop string
					err  error
				}
				ch := make(chan res, 1)
				go func() { s, err := a.prompt(ctx, sid, "Count slowly."); ch <- res{s, err} }()
				if !waitFor(time.Minute, func() bool { return a.sawUpdate("agent_message_chunk") }) {
					t.Fatalf("no agent_message_chunk\n%s", a.transcript())
				}
				sent := time.Now()
				a.notify("session/cancel", map[string]any{"sessionId": sid})
				select {
				case r := <-ch:
					if r.err != nil || r.stop != "cancelled" {
						t.Errorf("prompt ended %q, %v; want cancelled\n%s", r.stop, r.err, a.transcript())
					}
					t.Logf("cancelled %v after session/cancel", time.Since(sent).Round(time.Millisecond))
				case <-time.After(10 * time.Second):
					t.Fatalf("no prompt result within 10 s of session/cancel\n%s", a.transcript())
				}
			})
		})
	}
}

// directTurn opens a session and runs one prompt.
func directTurn(t *testing.T, w *world, a *acpAgent, text string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sid, err := a.newSession(ctx, w.work)
	if err != nil {
		t.Fatalf("%v\n%s", err, a.transcript())
	}
	stop, err := a.prompt(ctx, sid, text)
	if err != nil {
		t.Fatalf("%v\n%s", err, a.transcript())
	}
	return stop
}

// checkModelRequests checks that the CLI called the fake LLM for model, with
// the shell tool, and got past the tool result.
func checkModelRequests(t *testing.T, w *world, model string) {
	t.Helper()
	main := w.llm.MainRequests()
	if len(main) < 2 {
		t.Fatalf("%d model requests with tools, want at least 2 (tool call, then final text)", len(main))
	}
	for _, r := range main {
		if r.Model != model {
			t.Errorf("request #%d asked for model %q, want %q", r.Seq, r.Model, model)
		}
	}
	if !main[len(main)-1].AfterToolResult() {
		t.Errorf("the last model request carries no tool result")
	}
	for _, r := range w.llm.Requests() {
		if r.Status == 404 && !strings.HasPrefix(r.Path, npmRegistryPath) {
			t.Errorf("request #%d %s %s reached no fake API", r.Seq, r.Method, r.Path)
		}
	}
}

// testDirectResume runs one turn, ends the CLI as a client does (stdin EOF),
// then starts it again and loads the session: session/resume where the
// agent advertises it, else session/load. The model must see the first turn.
func testDirectResume(t *testing.T, rt *runtimeSpec) {
	w := newWorld(t, rt, fakellm.Config{})
	a := startACP(w, pickKind("allow_once"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sid, err := a.newSession(ctx, w.work)
	if err != nil {
		t.Fatalf("%v\n%s", err, a.transcript())
	}
	if stop, err := a.prompt(ctx, sid, shellPrompt); err != nil || stop != "end_turn" {
		t.Fatalf("first turn: %q %v\n%s", stop, err, a.transcript())
	}
	a.close()

	w.llm.Reset()
	w.llm.SetScript(func(*fakellm.Request) fakellm.Reply { return fakellm.Text("SECOND DONE") })
	b := startACP(w, pickKind("allow_once"))
	res, err := b.call(ctx, "initialize", map[string]any{"protocolVersion": 1,
		"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": false, "writeTextFile": false}, "terminal": false},
		"clientInfo":         map[string]any{"name": "avenor-e2e", "version": "0.0.1"}})
	if err != nil {
		t.Fatalf("%v\n%s", err, b.transcript())
	}
	method := "session/load"
	if strings.Contains(string(res), `"resume"`) {
		method = "session/resume"
	}
	if _, err := b.call(ctx, method, map[string]any{"sessionId": sid, "cwd": w.work, "mcpServers": []any{}}); err != nil {
		if knownLoadBug(rt, b.transcript()) {
			t.Skipf("KNOWN CLI BUG, not avenor's: %s\n%s", geminiLoadBug, b.transcript())
		}
		t.Fatalf("%s: %v\n%s", method, err, b.transcript())
	}
	if stop, err := b.prompt(ctx, sid, "This is the second turn."); err != nil || stop != "end_turn" {
		t.Fatalf("second turn: %q %v\n%s", stop, err, b.transcript())
	}
	main := w.llm.MainRequests()
	if len(main) == 0 || !main[0].Contains(shellPrompt) || !main[0].Contains(fakellm.DefaultCommand) {
		t.Errorf("after %s the model did not see the first turn", method)
	}
	t.Logf("resumed with %s", method)
}

// geminiLoadBug is why gemini-cli 0.61.0 cannot resume over ACP. Its
// session/load first starts a chat recording for the requested session id,
// which appends a fresh header and {"$set":{"messages":[<session_context>]}}
// to that session's own file (~/.gemini/tmp/<project>/chats/session-*-<id8>.jsonl),
// wiping the recorded history; it then lists the project's sessions, finds
// none with resumable content, and answers -32603 "No previous sessions
// found for this project." Reproduced here without avenor (TestDirect/gemini/resume).
const geminiLoadBug = "gemini-cli 0.61.0 session/load overwrites the session's history before reading it " +
	"and fails with \"No previous sessions found for this project.\""

// knownLoadBug says whether a failed resume is geminiLoadBug.
func knownLoadBug(rt *runtimeSpec, text string) bool {
	return rt == gemini && strings.Contains(text, "No previous sessions found for this project")
}
