package hosttest

import (
	"os"
	"strings"
	"testing"
)

// TestMCPSpawnReadiness: avenor_spawn of a backend whose runtime CLI is
// not installed fails the tool call with the install hint the plugin's
// check gives, and an unknown backend lists the installed ones; neither
// spawns anything (no supervisor is even started).
func TestMCPSpawnReadiness(t *testing.T) {
	w, sock := mcpWorld(t)
	// The scripted backend plays a runtime whose CLI is missing: its
	// session does not open, and its check says why and how to fix it.
	w.userConfig("[backends.scripted.options]\nfail_open = \"the runtime CLI \\\"scr\\\" was not found in PATH\"\nnot_ready = \"the runtime CLI \\\"scr\\\" was not found in PATH; install it with: npm install -g scr\"\n")
	m := startMCP(t, w, sock)
	msg := m.callErr("avenor_spawn", map[string]any{"repo_dir": w.work, "backend": "scripted", "prompt": "hi"})
	for _, want := range []string{"backend scripted is not usable here", `"scr" was not found`, "npm install -g scr"} {
		if !strings.Contains(msg, want) {
			t.Errorf("spawn without the runtime CLI: %q lacks %q", msg, want)
		}
	}
	msg = m.callErr("avenor_spawn", map[string]any{"repo_dir": w.work, "backend": "nosuch", "prompt": "hi"})
	if !strings.Contains(msg, `unknown backend "nosuch"`) || !strings.Contains(msg, "installed backends:") || !strings.Contains(msg, "echo") {
		t.Errorf("spawn of an unknown backend: %q", msg)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("a refused spawn started a supervisor at %s (%v)", sock, err)
	}
	// A ready backend still spawns.
	sp := m.call("avenor_spawn", map[string]any{"repo_dir": w.work, "backend": "echo", "prompt": "hi"})
	if res := m.call("avenor_result", map[string]any{"run_id": sp["run_id"], "timeout": 60}); res["status"] != "done" {
		t.Errorf("echo after the refusals: %v", res)
	}
	// The spawn started a supervisor; it must not outlive the test.
	m.call("avenor_shutdown", map[string]any{})
	assertSupervisorGone(t, sock)
}
