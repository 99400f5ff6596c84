//go:build e2e

package e2e

import (
	"path/filepath"
	"testing"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// TestSandboxWorkspaceOpencode: real opencode-acp, offline, auto-approved,
// under --sandbox workspace on each mechanism, with opencode's own file
// tools (node's fs calls, not a shell): the model writes a file in --dir
// (it lands), one beyond it (nothing lands) and reads a planted
// ~/.ssh/id_test (the key never shows); the write beyond and the read are
// each an avenor.sandbox.denied naming the path and the tool call; the
// turn completes and session.start names the mechanism.
func TestSandboxWorkspaceOpencode(t *testing.T) {
	forMechanisms(t, func(t *testing.T) *world { return newWorld(t, opencode, fakellm.Config{}) }, func(t *testing.T, w *world, mech string) {
		secret, beyond := sandboxPlant(t, w)
		inside, outside := filepath.Join(w.work, "inside.txt"), filepath.Join(beyond, "outside.txt")
		w.llm.SetScript(toolScript(
			fakellm.ToolCall{Name: "write", Args: map[string]any{"filePath": inside, "content": "in\n"}},
			fakellm.ToolCall{Name: "write", Args: map[string]any{"filePath": outside, "content": "out\n"}},
			fakellm.ToolCall{Name: "read", Args: map[string]any{"filePath": secret}},
		))
		run := w.startAvenor("run", "--prompt", "Write inside.txt, then outside.txt, then read the key.", "--auto-approve", "--sandbox", "workspace")
		res, evs, s := run.finish()
		checkSandboxDenied(t, w, mech, res, evs, s, outside, secret)
	})
}

// toolScript has the model make calls one after the other, each after the
// previous one's result, then say DONE.
func toolScript(calls ...fakellm.ToolCall) func(r *fakellm.Request) fakellm.Reply {
	return func(r *fakellm.Request) fakellm.Reply {
		done := 0
		for _, m := range r.Messages {
			done += len(m.ToolResults)
		}
		if done >= len(calls) {
			return fakellm.Text("DONE")
		}
		call := calls[done]
		call.ID = "call_" + string(rune('a'+done))
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{call}}
	}
}
