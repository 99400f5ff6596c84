package hosttest

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestMCPSpawnLaunch: avenor_spawn's permission_mode, append_system_prompt
// (@FILE relative to repo_dir) and allowed_tools reach the run — plan
// rejects its write even with auto_approve — and its follow-up runs under
// the same mode; a mode the backend does not declare fails the tool call
// naming the backend, and nothing runs.
func TestMCPSpawnLaunch(t *testing.T) {
	w, sock := mcpWorld(t)
	w.writeFile("work/sys.md", "be brief")
	m := startMCP(t, w, sock)
	sp := m.call("avenor_spawn", map[string]any{"repo_dir": w.work, "backend": "scripted", "prompt": "permission tool=Write",
		"auto_approve": true, "permission_mode": "plan", "append_system_prompt": "@sys.md", "allowed_tools": []string{}})
	res := m.call("avenor_result", map[string]any{"run_id": sp["run_id"], "timeout": 60})
	if res["status"] != "done" {
		t.Fatalf("the run: %v", res)
	}
	st := m.call("avenor_status", map[string]any{"run_id": sp["run_id"]})
	path, _ := st["event_path"].(string)
	evs := readEvents(t, path)
	start := only(evs, "session.start")[0]
	tools, _ := json.Marshal(start["allowed_tools"])
	if n, _ := start.num("append_system_prompt_length"); start.str("permission_mode") != "plan" || string(tools) != "[]" || n != float64(len("be brief")) {
		t.Errorf("session.start %v: want permission_mode plan, allowed_tools [] and the @FILE's prompt", start)
	}
	if got := decisions(evs); got != "mode:reject" {
		t.Errorf("decisions %s; want the write rejected by the mode", got)
	}

	fu := m.call("avenor_follow_up", map[string]any{"run_id": sp["run_id"], "message": "permission tool=Bash"})
	if res := m.call("avenor_result", map[string]any{"run_id": fu["run_id"], "timeout": 60}); res["status"] != "done" {
		t.Fatalf("the follow-up: %v", res)
	}
	fst := m.call("avenor_status", map[string]any{"run_id": fu["run_id"]})
	fpath, _ := fst["event_path"].(string)
	if got := decisions(readEvents(t, fpath)); got != "mode:reject" {
		t.Errorf("the follow-up's decisions %s; want its command rejected by the run's mode", got)
	}

	msg := m.callErr("avenor_spawn", map[string]any{"repo_dir": w.work, "backend": "echo", "prompt": "hi", "permission_mode": "plan"})
	if !strings.Contains(msg, `backend "echo" does not support permission_mode (no mode is supported); nothing was started`) {
		t.Errorf("spawn of a mode echo does not declare: %q", msg)
	}
	if msg := m.callErr("avenor_spawn", map[string]any{"repo_dir": w.work, "backend": "scripted", "prompt": "hi", "permission_mode": "yolo"}); !strings.Contains(msg, "permission_mode") {
		t.Errorf("spawn with an unknown mode: %q", msg)
	}
	m.call("avenor_shutdown", map[string]any{})
	assertSupervisorGone(t, sock)
}
