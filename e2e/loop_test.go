//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// TestLoopOnOpencode: a 2-phase loop (a pre "build" phase, then a "check"
// loop phase) on the real `opencode acp`, offline. The model answers the
// check phase with a whole-line exit marker on iteration 1; the loop ends
// there with exit_reason "marker", one event stream, one DONE sentinel.
func TestLoopOnOpencode(t *testing.T) {
	w := newWorld(t, opencode, fakellm.Config{Script: func(r *fakellm.Request) fakellm.Reply {
		last := ""
		for _, m := range r.Messages {
			if m.Role == "user" {
				last = m.Text
			}
		}
		if strings.Contains(last, "Check the build") {
			return fakellm.Text("The build looks right.\n[loop: exit | checked]\n")
		}
		return fakellm.Text("Built it.")
	}})
	cfg := map[string]any{
		"max_iterations": 3,
		"pre":            []map[string]any{{"name": "build", "prompt": "Build the project."}},
		"loop":           []map[string]any{{"name": "check", "prompt": "Check the build (iteration {{.Iteration}})."}},
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	loopFile := w.path("loop.json")
	if err := os.WriteFile(loopFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	run := w.startAvenor("loop", "--loop-file", loopFile, "--run-id", "deadbeefcafe0e2e")
	res, evs, s := run.finish()
	if res.code != 0 {
		t.Fatalf("loop: want exit 0; got %v", res)
	}
	var phases []string
	for _, ev := range evs {
		switch ev.name() {
		case "avenor.phase.end":
			phases = append(phases, ev.str("phase")+":"+ev.str("stop_reason"))
		}
	}
	if strings.Join(phases, ",") != "build:end_turn,check:end_turn" {
		t.Fatalf("phases %v, want build then check, both end_turn", phases)
	}
	end := only(evs, "avenor.loop.end")
	if len(end) != 1 || end[0].str("exit_reason") != "marker" || end[0].str("exit_label") != "checked" {
		t.Fatalf("avenor.loop.end %v, want exit_reason marker with label checked", end)
	}
	if n := len(only(evs, "session.start")); n != 2 {
		t.Errorf("%d sessions, want 2 (one per phase)", n)
	}
	if s.status != "DONE" {
		t.Errorf("sentinel status %q, want DONE", s.status)
	}
}
