//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// sandboxPlant gives w a HOME beyond /tmp with a planted ~/.ssh/id_test,
// and a directory beyond /tmp to write into: only the boundary, not the
// sandbox's private /tmp, stands between them and the runtime. It returns
// the key and that directory.
func sandboxPlant(t *testing.T, w *world) (secret, beyond string) {
	t.Helper()
	root, err := os.MkdirTemp("/var/tmp", "avenor-e2e-sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	home, beyond := filepath.Join(root, "home"), filepath.Join(root, "beyond")
	secret = filepath.Join(home, ".ssh", "id_test")
	for _, d := range []string{beyond, filepath.Dir(secret)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(secret, []byte("PLANTED-SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.env = append(w.env, "HOME="+home) // the last HOME wins
	return secret, beyond
}

// shellScript has the model run cmds with its shell tool one after the
// other, each after the previous one's result, then say DONE.
func shellScript(cmds ...string) func(r *fakellm.Request) fakellm.Reply {
	return func(r *fakellm.Request) fakellm.Reply {
		done := 0
		for _, m := range r.Messages {
			done += len(m.ToolResults)
		}
		tool, ok := r.ShellTool()
		if done >= len(cmds) || !ok {
			return fakellm.Text("DONE")
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_" + string(rune('a'+done)), Name: tool.Name,
			Args: fakellm.ShellArgs(tool, cmds[done])}}}
	}
}

// sandboxMechanisms are the mechanisms every sandbox e2e test runs
// under, each forced (sandbox.MechanismEnv): a mechanism that cannot
// start fails the test instead of falling back to the other.
var sandboxMechanisms = []string{"bubblewrap", "landlock"}

// forMechanisms runs test once per mechanism, as a subtest named after
// it, in a world made by mk with that mechanism forced.
func forMechanisms(t *testing.T, mk func(t *testing.T) *world, test func(t *testing.T, w *world, mechanism string)) {
	for _, mech := range sandboxMechanisms {
		t.Run(mech, func(t *testing.T) {
			w := mk(t)
			w.env = append(w.env, "AVENOR_SANDBOX_MECHANISM="+mech)
			test(t, w, mech)
		})
	}
}

// checkSandboxStart: session.start records a workspace sandbox enforced
// by mechanism.
func checkSandboxStart(t *testing.T, evs []event, mechanism string) {
	t.Helper()
	want := map[string]any{"mechanism": mechanism, "profile": "workspace", "network": "host"}
	if start := only(evs, "session.start"); len(start) != 1 || !reflect.DeepEqual(start[0]["sandbox"], want) {
		t.Errorf("session.start %v does not record the sandbox %v", start, want)
	}
}

// checkSandboxDenied: the turn completed under mechanism; a write in --dir landed; the
// write beyond it and the read of the key were each denied with an
// avenor.sandbox.denied naming the op and the path; the key never showed.
func checkSandboxDenied(t *testing.T, w *world, mechanism string, res result, evs []event, s sentinel, outside, secret string) {
	t.Helper()
	checkDone(t, "run", res, evs, s)
	checkSandboxStart(t, evs, mechanism)
	if got, err := os.ReadFile(filepath.Join(w.work, "inside.txt")); err != nil || strings.TrimSpace(string(got)) != "in" {
		t.Errorf("inside.txt = %q, %v; the write in --dir should have landed", got, err)
	}
	if fileExists(outside) {
		t.Errorf("%s exists: a write beyond --dir got out of the sandbox", outside)
	}
	logSandboxRun(t, mechanism, evs)
	want := map[string]string{"write": outside, "read": secret}
	got := map[string]string{}
	for _, ev := range only(evs, "avenor.sandbox.denied") {
		got[ev.str("op")] = ev.str("path")
		if ev.str("tool") == "" {
			t.Errorf("denied %v names no tool call", ev)
		}
	}
	if len(only(evs, "avenor.sandbox.denied")) != len(want) {
		t.Errorf("denied events %v; want exactly a write and a read", only(evs, "avenor.sandbox.denied"))
	}
	for op, path := range want {
		if got[op] != path {
			t.Errorf("no avenor.sandbox.denied{op:%s, path:%s}; denied: %v", op, path, only(evs, "avenor.sandbox.denied"))
		}
	}
	for _, ev := range only(evs, "tool.call_update") {
		if b, _ := json.Marshal(ev); strings.Contains(string(b), "PLANTED-SECRET") {
			t.Errorf("the planted key was read inside the sandbox: %v", ev)
		}
	}
}

// TestSandboxDeniedCodex: real codex-app-server, offline, under --sandbox
// workspace on each mechanism: its shell writes in --dir, is denied a
// write beyond it and the read of a planted key, each an
// avenor.sandbox.denied; the turn completes. Auto-approved, and under
// --permission-mode accept-edits with auto-approve answering the commands
// the mode leaves to ask.
func TestSandboxDeniedCodex(t *testing.T) {
	codex.bin = func() string { return codexBin(t) }
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"auto-approve", []string{"--auto-approve"}},
		{"accept-edits", []string{"--permission-mode", "accept-edits", "--auto-approve"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forMechanisms(t, func(t *testing.T) *world { return newWorld(t, codex, fakellm.Config{}) }, func(t *testing.T, w *world, mech string) {
				// Codex's own sandbox, as a user may have configured it:
				// inside avenor's boundary the plugin turns it off (it
				// cannot start nested), or every command would fail.
				cfg := w.path("codex-home/config.toml")
				b, err := os.ReadFile(cfg)
				if err != nil {
					t.Fatal(err)
				}
				w.writeFile(cfg, strings.Replace(string(b), `sandbox_mode = "danger-full-access"`, `sandbox_mode = "read-only"`, 1))
				secret, beyond := sandboxPlant(t, w)
				outside := filepath.Join(beyond, "outside.txt")
				w.llm.SetScript(shellScript("echo in > inside.txt", "touch "+outside, "cat "+secret))
				run := w.startAvenor("run", append([]string{"--prompt", "Write inside.txt, outside.txt, then read the key.", "--sandbox", "workspace"}, tc.args...)...)
				res, evs, s := run.finish()
				checkSandboxDenied(t, w, mech, res, evs, s, outside, secret)
				checkCodexNested(t, w)
			})
		})
	}
}

// codexNestedSays is how Codex 0.171 tells the model its own sandbox is off
// (its permissions instructions), as thread/start set it.
const codexNestedSays = "`sandbox_mode` is `danger-full-access`"

// checkCodexNested: inside avenor's boundary, whichever mechanism, Codex's
// own sandbox was off (plugins/codex NestedSandbox), though its config
// asked for read-only: Codex told the model so in the turn's first request.
func checkCodexNested(t *testing.T, w *world) {
	t.Helper()
	reqs := w.llm.MainRequests()
	if len(reqs) == 0 {
		t.Fatal("Codex sent the model no request")
	}
	for _, m := range reqs[0].Messages {
		if strings.Contains(m.Text, codexNestedSays) {
			return
		}
	}
	t.Errorf("Codex's first request does not say %s: its own sandbox was not turned off inside avenor's", codexNestedSays)
}

// TestSandboxDeniedOpencode: real opencode-acp, offline, auto-approved,
// under --sandbox workspace on each mechanism: as TestSandboxDeniedCodex,
// with opencode's shell tool.
func TestSandboxDeniedOpencode(t *testing.T) {
	forMechanisms(t, func(t *testing.T) *world { return newWorld(t, opencode, fakellm.Config{}) }, func(t *testing.T, w *world, mech string) {
		secret, beyond := sandboxPlant(t, w)
		outside := filepath.Join(beyond, "outside.txt")
		w.llm.SetScript(shellScript("echo in > inside.txt", "touch "+outside, "cat "+secret))
		run := w.startAvenor("run", "--prompt", "Write inside.txt, outside.txt, then read the key.", "--auto-approve", "--sandbox", "workspace")
		res, evs, s := run.finish()
		checkSandboxDenied(t, w, mech, res, evs, s, outside, secret)
	})
}

// logSandboxRun logs what the boundary showed a run under mechanism: each
// avenor.sandbox.denied with the line of its tool call's output that
// named the path (the runtime's wording of the errno), so that a run under
// -v, passing or not, shows what the runtime saw.
func logSandboxRun(t *testing.T, mechanism string, evs []event) {
	t.Helper()
	for _, ev := range only(evs, "avenor.sandbox.denied") {
		t.Logf("%s: denied %s %s (tool %s): %q", mechanism, ev.str("op"), ev.str("path"), ev.str("tool"), outputLine(evs, ev.str("tool"), ev.str("path")))
	}
}

// outputLine is the first line of tool call id's final output (rawOutput's
// output or error) that names path.
func outputLine(evs []event, id, path string) string {
	for _, ev := range only(evs, "tool.call_update") {
		if ev.str("toolCallId") != id || ev.str("status") != "completed" && ev.str("status") != "failed" {
			continue
		}
		raw, _ := ev["rawOutput"].(map[string]any)
		for _, k := range []string{"output", "error"} {
			text, _ := raw[k].(string)
			for line := range strings.Lines(text) {
				if strings.Contains(line, path) {
					return strings.TrimSpace(line)
				}
			}
		}
	}
	return ""
}
