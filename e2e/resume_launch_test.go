//go:build e2e

package e2e

import (
	"slices"
	"testing"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// TestResumeChangesModeClaude: Claude Code resumes a session in a fresh
// process started with the flags of the resume, so `avenor run --resume S
// --permission-mode plan` runs the resumed session read-only: the model
// asks for a write and a command, and the workspace stays as it was.
func TestResumeChangesModeClaude(t *testing.T) {
	installClaude(t)
	w := newWorld(t, claudeStream, fakellm.Config{})
	w.llm.SetScript(func(*fakellm.Request) fakellm.Reply { return fakellm.Text("FIRST DONE") })
	res, evs, s1 := w.startAvenor("run1", "--prompt", "Say hello.").finish()
	if res.code != 0 || s1.session == "" {
		t.Fatalf("run1: %v, sentinel %+v, events %v", res, s1, names(evs))
	}
	w.llm.Reset()
	w.llm.SetScript(editThenCommand(claudeStream, w.work))
	before := workspace(t, w.work)
	res, evs, s2 := w.startAvenor("run2", "--resume", s1.session, "--prompt", "Write edit.txt, then run a command.",
		"--permission-mode", "plan", "--auto-approve").finish()
	if res.code != 0 || s2.status != "DONE" || s2.session != s1.session {
		t.Errorf("run2: %v, sentinel %+v; want DONE in session %s", res, s2, s1.session)
	}
	if after := workspace(t, w.work); !slices.Equal(before, after) {
		t.Errorf("the workspace changed in the resumed session under plan: %v → %v", before, after)
	}
	if start := only(evs, "session.start"); len(start) != 1 || start[0].str("permission_mode") != "plan" {
		t.Errorf("the resumed session.start %v does not record permission_mode plan", start)
	}
}
