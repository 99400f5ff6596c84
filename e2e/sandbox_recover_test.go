//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/e2e/fakellm"
)

// TestSandboxRecoverOpencode: real opencode-acp, offline, auto-approved,
// under --sandbox workspace --sandbox-recover on each mechanism: the
// model's write beyond --dir is denied; when the turn ends the run asks a
// person (a permission request of kind sandbox, answered allow over the
// control socket); the run restarts on the same session with that
// directory writable, the model, told so, writes again, and the file
// lands. It logs the recovery's time.
func TestSandboxRecoverOpencode(t *testing.T) {
	forMechanisms(t, func(t *testing.T) *world { return newWorld(t, opencode, fakellm.Config{}) }, func(t *testing.T, w *world, mech string) {
		_, beyond := sandboxPlant(t, w)
		outside := filepath.Join(beyond, "outside.txt")
		w.llm.SetScript(writeEachTurn(outside))
		recoverApproved(t, w, mech, outside, "--auto-approve")
	})
}

// TestSandboxRecoverCodex: real codex-app-server, offline, as
// TestSandboxRecoverOpencode with Codex's shell: the resumed thread's
// command writes the file.
func TestSandboxRecoverCodex(t *testing.T) {
	codex.bin = func() string { return codexBin(t) }
	forMechanisms(t, func(t *testing.T) *world { return newWorld(t, codex, fakellm.Config{}) }, func(t *testing.T, w *world, mech string) {
		_, beyond := sandboxPlant(t, w)
		outside := filepath.Join(beyond, "outside.txt")
		w.llm.SetScript(shellEachTurn("echo out > " + outside))
		recoverApproved(t, w, mech, outside, "--auto-approve")
	})
}

// recoverApproved runs w's runtime under --sandbox workspace
// --sandbox-recover, whose model writes outside in each turn; approves
// the sandbox request over the control socket; and checks that the run
// resumed its session widened and the file landed.
func recoverApproved(t *testing.T, w *world, mech, outside string, extra ...string) {
	t.Helper()
	beyond := filepath.Dir(outside)
	sock := w.path("c.sock")
	run := w.startAvenor("run", append([]string{"--prompt", "Write outside.txt.", "--sandbox", "workspace",
		"--sandbox-recover", "--control-socket", sock}, extra...)...)
	req := awaitSandboxRequest(t, run)
	if req.str("path") != outside || req.str("allow_write") != beyond {
		t.Errorf("sandbox request %v; want path %s, allow_write %s", req, outside, beyond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.AnswerPermission(ctx, req.str("request_id"), "allow", ""); err != nil {
		t.Fatalf("answer_permission: %v", err)
	}
	res, evs, s := run.finish()
	checkDone(t, "run", res, evs, s)
	if got, err := os.ReadFile(outside); err != nil || strings.TrimSpace(string(got)) != "out" {
		t.Errorf("%s = %q, %v; the write after the approval should have landed", outside, got, err)
	}
	starts := only(evs, "session.start")
	if len(starts) != 2 || starts[0].str("session_id") == "" || starts[1].str("session_id") != starts[0].str("session_id") {
		t.Fatalf("session.start %v; want two on the same session", starts)
	}
	if wd := only(evs, "avenor.sandbox.widened"); len(wd) != 1 || wd[0].str("allow_write") != beyond {
		t.Errorf("avenor.sandbox.widened %v; want one making %s writable", wd, beyond)
	}
	if r := only(evs, "avenor.restarted"); len(r) != 1 || r[0].str("reason") != "sandbox_widened" {
		t.Errorf("avenor.restarted %v; want one, reason sandbox_widened", r)
	}
	logRecoveryTime(t, mech, evs)
}

// writeEachTurn has the model write path with its write tool once in
// each turn (after each prompt: the run's, then the restart's note), then
// say DONE.
func writeEachTurn(path string) func(r *fakellm.Request) fakellm.Reply {
	return eachTurn(func(*fakellm.Request) (fakellm.ToolCall, bool) {
		return fakellm.ToolCall{Name: "write", Args: map[string]any{"filePath": path, "content": "out\n"}}, true
	})
}

// shellEachTurn has the model run cmd with its shell tool once in each
// turn, then say DONE.
func shellEachTurn(cmd string) func(r *fakellm.Request) fakellm.Reply {
	return eachTurn(func(r *fakellm.Request) (fakellm.ToolCall, bool) {
		tool, ok := r.ShellTool()
		if !ok {
			return fakellm.ToolCall{}, false
		}
		return fakellm.ToolCall{Name: tool.Name, Args: fakellm.ShellArgs(tool, cmd)}, true
	})
}

// eachTurn has the model make call once after each prompt (the last user
// message with text), then say DONE.
func eachTurn(call func(r *fakellm.Request) (fakellm.ToolCall, bool)) func(r *fakellm.Request) fakellm.Reply {
	return func(r *fakellm.Request) fakellm.Reply {
		last := -1
		for i, m := range r.Messages {
			if m.Role == "user" && m.Text != "" && len(m.ToolResults) == 0 {
				last = i
			}
		}
		results := 0
		for _, m := range r.Messages[last+1:] {
			results += len(m.ToolResults)
		}
		c, ok := call(r)
		if results > 0 || !ok {
			return fakellm.Text("DONE")
		}
		c.ID = "call_" + strconv.Itoa(last+1)
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{c}}
	}
}

// awaitSandboxRequest waits for run's permission request of kind sandbox.
func awaitSandboxRequest(t *testing.T, run *avenorRun) event {
	t.Helper()
	var req event
	if !waitFor(2*time.Minute, func() bool {
		if b, err := os.ReadFile(run.events); err == nil && strings.Contains(string(b), `"kind":"sandbox"`) {
			for _, ev := range only(readEvents(t, run.events), "permission.request") {
				if ev.str("kind") == "sandbox" {
					req = ev
				}
			}
		}
		return req != nil || run.p.ended()
	}) || req == nil {
		t.Fatalf("no permission request of kind sandbox\n%v", run.p.wait())
	}
	return req
}

// logRecoveryTime logs the time from the denial, and from the approval
// (the sandbox request's permission.response), to the fresh turn's
// session.start, and from the approval to avenor.restarted (the stopped
// process gone): the rest is the runtime's own start and resume.
func logRecoveryTime(t *testing.T, mech string, evs []event) {
	t.Helper()
	at := func(name string, nth int) time.Time {
		for _, ev := range evs {
			if ev.name() == name {
				if nth == 0 {
					ms, _ := ev["ts"].(float64)
					return time.UnixMilli(int64(ms))
				}
				nth--
			}
		}
		return time.Time{}
	}
	var approved time.Time
	for _, ev := range evs {
		if ev.name() == "permission.response" && strings.HasPrefix(ev.str("request_id"), "sandbox-") {
			ms, _ := ev["ts"].(float64)
			approved = time.UnixMilli(int64(ms))
		}
	}
	fresh := at("session.start", 1)
	t.Logf("%s recovery: denial → fresh session.start %s; approval → restarted %s; approval → fresh session.start %s",
		mech, fresh.Sub(at("avenor.sandbox.denied", 0)), at("avenor.restarted", 0).Sub(approved), fresh.Sub(approved))
}
