//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// TestSandboxWorkspaceOpencode: real opencode-acp, offline, auto-approved,
// under --sandbox workspace: the model writes a file in --dir (it lands)
// and one beyond it (the sandbox denies it: nothing lands, and an
// avenor.sandbox.denied names the write), and the turn completes. The outside target lies beyond /tmp, so that only the
// boundary — not the sandbox's private /tmp — stands in its way.
func TestSandboxWorkspaceOpencode(t *testing.T) {
	w := newWorld(t, opencode, fakellm.Config{})
	outside, evs := writeInsideOutside(t, w)
	// opencode's write tool reports the boundary's refusal in its output:
	// one denied write of that path, by that tool call.
	denied := only(evs, "avenor.sandbox.denied")
	if len(denied) != 1 || denied[0].str("op") != "write" || denied[0].str("path") != outside || denied[0].str("tool") == "" {
		t.Errorf("denied events %v; want one write of %s", denied, outside)
	}
	checkSandboxStart(t, evs, "bubblewrap")
}

// writeInsideOutside runs opencode under --sandbox workspace with a model
// that writes inside.txt in --dir, then outside.txt beyond /tmp (so that
// only the boundary, not the sandbox's private /tmp, stands in its way),
// and checks what holds under any mechanism: the turn completes, the
// write in --dir lands and the one beyond it does not. It returns the
// outside path and the run's events.
func writeInsideOutside(t *testing.T, w *world) (string, []event) {
	t.Helper()
	beyond, err := os.MkdirTemp("/var/tmp", "avenor-e2e-sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(beyond) })
	inside, outside := filepath.Join(w.work, "inside.txt"), filepath.Join(beyond, "outside.txt")
	w.llm.SetScript(func(r *fakellm.Request) fakellm.Reply {
		done := 0
		for _, m := range r.Messages {
			done += len(m.ToolResults)
		}
		write := func(id, path string) fakellm.Reply {
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: id, Name: "write",
				Args: map[string]any{"filePath": path, "content": "written\n"}}}}
		}
		switch done {
		case 0:
			return write("call_inside", inside)
		case 1:
			return write("call_outside", outside)
		}
		return fakellm.Text("DONE")
	})
	run := w.startAvenor("run", "--prompt", "Write inside.txt, then outside.txt.", "--auto-approve", "--sandbox", "workspace")
	res, evs, s := run.finish()
	if res.code != 0 || s.status != "DONE" {
		t.Fatalf("run: %v, sentinel %+v", res, s)
	}
	if got, err := os.ReadFile(inside); err != nil || string(got) != "written\n" {
		t.Errorf("inside.txt = %q, %v; the write in --dir should have landed", got, err)
	}
	if fileExists(outside) {
		t.Errorf("%s exists: a write beyond --dir got out of the sandbox", outside)
	}
	return outside, evs
}

// checkSandboxStart: session.start records the workspace sandbox under
// mech, with the host's network.
func checkSandboxStart(t *testing.T, evs []event, mech string) {
	t.Helper()
	start := only(evs, "session.start")
	if len(start) != 1 || !reflect.DeepEqual(start[0]["sandbox"], map[string]any{"mechanism": mech, "profile": "workspace", "network": "host"}) {
		t.Errorf("session.start %v does not record the sandbox", start)
	}
}
