//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// TestLiveViewOpencode runs a real opencode-acp turn the way a person does:
// avenor in a terminal (a private tmux server), stderr on that terminal. The
// captured pane must show the agent's text, the tool call, the permission
// request with the command that answers it, the answer and the end summary;
// the event log and sentinel are those a harness gets.
func TestLiveViewOpencode(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is not installed (.ci/run installs it): %v", err)
	}
	w := newWorld(t, opencode, fakellm.Config{})
	events, sentinel, permBase := w.path("run.events.ndjson"), w.path("run.done"), w.path("run.perm")
	// The pane's shell gets exactly the world's environment.
	var script strings.Builder
	script.WriteString("#!/bin/sh\n")
	for _, kv := range append(w.env, "NO_COLOR=1", "TERM=xterm-256color") {
		k, v, _ := strings.Cut(kv, "=")
		script.WriteString("export " + k + "='" + strings.ReplaceAll(v, "'", `'\''`) + "'\n")
	}
	script.WriteString("cd '" + w.work + "'\n")
	script.WriteString("'" + bins.avenor + "' --backend opencode-acp --dir '" + w.work + "' --on-event '" + events +
		"' --sentinel-file '" + sentinel + "' --prompt '" + shellPrompt + "'\n")
	script.WriteString("echo \"[avenor exited $?]\"\nsleep 600\n")
	sh := w.path("live.sh")
	if err := os.WriteFile(sh, []byte(script.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(w.tmp, "tmux.sock")
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tmux("new-session", "-d", "-s", "live", "-x", "150", "-y", "50", sh)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", sock, "kill-server").Run() })
	capture := func() string { return tmux("capture-pane", "-p", "-J", "-t", "live", "-S", "-200") }

	reqPath := permBase + ".req"
	if !waitFor(2*time.Minute, func() bool { return fileExists(reqPath) }) {
		t.Fatalf("no %s was written; the pane shows:\n%s", reqPath, capture())
	}
	var req permissionFile
	b, err := os.ReadFile(reqPath)
	if err != nil || json.Unmarshal(b, &req) != nil {
		t.Fatalf("reading %s: %v\n%s", reqPath, err, b)
	}
	option := ""
	for _, o := range req.Options {
		if k := strings.ToLower(o.Kind); k == "allow_once" || (option == "" && strings.HasPrefix(k, "allow")) {
			option = o.OptionID
		}
	}
	if !waitFor(10*time.Second, func() bool { return strings.Contains(capture(), "avenor answer --option") }) {
		t.Errorf("the pane does not show how to answer the permission:\n%s", capture())
	}
	answer := exec.Command(bins.avenor, "answer", "--option", option, permBase)
	answer.Env = w.env
	if out, err := answer.CombinedOutput(); err != nil {
		t.Fatalf("avenor answer: %v\n%s", err, out)
	}
	if !waitFor(2*time.Minute, func() bool { return strings.Contains(capture(), "[avenor exited") }) {
		t.Fatalf("avenor did not end; the pane shows:\n%s", capture())
	}
	pane := strings.TrimRight(capture(), "\n")
	t.Logf("captured live view of a real opencode-acp turn:\n%s", pane)
	for _, want := range []string{
		"● opencode-acp",
		"▸ ",                      // a tool call
		"? permission ",           // the request
		"avenor answer --option ", // how to answer it
		"✓ allowed: " + option + " by file",
		"DONE",                   // the model's text
		"■ end_turn · exit 0 · ", // the summary
		"sentinel " + sentinel,
		"[avenor exited 0]",
	} {
		if !strings.Contains(pane, want) {
			t.Errorf("the pane lacks %q", want)
		}
	}
	evs := readEvents(t, events)
	checkSessionEnd(t, "run", evs, "end_turn")
	checkPermission(t, "run", evs, "allow", "file")
	checkOutFile(t, w, true)
}
