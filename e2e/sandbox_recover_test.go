//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
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
		sock := w.path("c.sock")
		run := w.startAvenor("run", "--prompt", "Write outside.txt.", "--auto-approve", "--sandbox", "workspace",
			"--sandbox-recover", "--control-socket", sock)
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
	})
}

// writeEachTurn has the model write path once in each turn (after each
// prompt: the run's, then the restart's note), then say DONE.
func writeEachTurn(path string) func(r *fakellm.Request) fakellm.Reply {
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
		if results > 0 {
			return fakellm.Text("DONE")
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_" + string(rune('a'+last%26)), Name: "write",
			Args: map[string]any{"filePath": path, "content": "out\n"}}}}
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
