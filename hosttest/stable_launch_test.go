package hosttest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// spawnLaunch spawns with params as given (the launch params are not
// fields of client.SpawnParams) and returns the spawn's runtime id.
func spawnLaunch(t *testing.T, c *client.Client, params map[string]any) (string, error) {
	t.Helper()
	res, err := spawnRaw(t, c, params)
	id, _ := res["runtime_id"].(string)
	return id, err
}

// decisions are the sources and kinds of a log's permission.response events.
func decisions(evs []event) string {
	var out []string
	for _, ev := range only(evs, "permission.response") {
		out = append(out, ev.str("source")+":"+ev.str("kind"))
	}
	return strings.Join(out, ",")
}

// TestStableSpawnLaunchApplied: a spawn's permission_mode, append_system_prompt
// (@FILE relative to its dir), allowed_tools (a list) and mcp_config (a file
// relative to its dir) reach its runtime: session.start records them, the
// broker in plan rejects a write and a command even with auto_approve, list
// shows the mode, and a follow-up of the runtime runs under the same mode.
func TestStableSpawnLaunchApplied(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.writeFile("work/sys.md", "be brief")
	w.writeFile("work/mcp.json", `{"mcpServers":{"files":{"command":"/bin/true"}}}`)
	c := w.startStable("launch", nil).client()
	id, err := spawnLaunch(t, c, map[string]any{
		"backend": "scripted", "dir": w.work, "prompt": "permission tool=Write\npermission tool=Bash\n", "auto_approve": true,
		"permission_mode": "plan", "append_system_prompt": "@sys.md", "allowed_tools": []string{"Read", "Grep"}, "mcp_config": "mcp.json",
	})
	if err != nil {
		t.Fatalf("spawn: %v", err)
	}
	rt := waitEnded(t, c, id, 30*time.Second)
	var entry map[string]any
	if err := json.Unmarshal(rt.Raw, &entry); err != nil || entry["permission_mode"] != "plan" {
		t.Errorf("the runtime's entry %s has no permission_mode plan", rt.Raw)
	}
	evs := readEvents(t, rt.EventPath)
	start := only(evs, "session.start")[0]
	if start.str("permission_mode") != "plan" || !equalJSON(start["permission_allows"], map[string]any{"edits": "deny", "commands": "deny"}) {
		t.Errorf("session.start %v: want permission_mode plan", start)
	}
	if n, _ := start.num("append_system_prompt_length"); n != float64(len("be brief")) {
		t.Errorf("session.start %v: want append_system_prompt_length %d (the @FILE's text)", start, len("be brief"))
	}
	if got, _ := json.Marshal(start["allowed_tools"]); string(got) != `["Read","Grep"]` {
		t.Errorf("session.start allowed_tools %s, want [\"Read\",\"Grep\"]", got)
	}
	if got, _ := json.Marshal(start["mcp_servers"]); string(got) != `["files"]` {
		t.Errorf("session.start mcp_servers %s, want [\"files\"]", got)
	}
	if got := decisions(evs); got != "mode:reject,mode:reject" {
		t.Errorf("decisions %s; want the write and the command rejected by the mode", got)
	}

	if err := c.Prompt(ctxT(t, 10*time.Second), "permission tool=Edit", id); err != nil {
		t.Fatalf("follow-up: %v", err)
	}
	if !waitFor(20*time.Second, func() bool { return len(only(readEventsQuiet(rt.EventPath), "session.end")) >= 2 }) {
		t.Fatalf("the follow-up never ended")
	}
	if got := decisions(readEvents(t, rt.EventPath)); got != "mode:reject,mode:reject,mode:reject" {
		t.Errorf("decisions %s; want the follow-up's edit rejected by the mode too", got)
	}
}

// TestStableSpawnAllowedToolsString: allowed_tools as a comma string, and
// "" as no tool at all, as --allowed-tools takes them.
func TestStableSpawnAllowedToolsString(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	c := w.startStable("tools", nil).client()
	for _, tc := range []struct {
		tools any
		want  string
	}{{"Read, Grep", `["Read","Grep"]`}, {"", `[]`}, {[]string{}, `[]`}} {
		id, err := spawnLaunch(t, c, map[string]any{"backend": "scripted", "dir": w.work, "prompt": "say hi", "allowed_tools": tc.tools})
		if err != nil {
			t.Fatalf("spawn allowed_tools %q: %v", tc.tools, err)
		}
		rt := waitEnded(t, c, id, 30*time.Second)
		start := only(readEvents(t, rt.EventPath), "session.start")[0]
		if got, _ := json.Marshal(start["allowed_tools"]); string(got) != tc.want {
			t.Errorf("allowed_tools %q: session.start has %s, want %s", tc.tools, got, tc.want)
		}
	}
}

// TestStableSpawnLaunchFromConfig: a permission mode the supervisor's
// environment (a config layer) sets applies to its spawns as it does to
// avenor run.
func TestStableSpawnLaunchFromConfig(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	c := w.startStable("launchenv", []string{"AVENOR_PERMISSION_MODE=plan"}).client()
	id, err := spawnLaunch(t, c, map[string]any{"backend": "scripted", "dir": w.work, "prompt": "permission tool=Write", "auto_approve": true})
	if err != nil {
		t.Fatalf("spawn: %v", err)
	}
	rt := waitEnded(t, c, id, 30*time.Second)
	if got := decisions(readEvents(t, rt.EventPath)); got != "mode:reject" {
		t.Errorf("decisions %s; want the write rejected by the env layer's mode", got)
	}
}

// TestStableSpawnLaunchRefused: a mode or launch-context field the backend
// does not declare, and launch params that do not read, refuse the spawn
// before anything starts: a clear error (typed data naming the backend and
// its modes), no runtime listed.
func TestStableSpawnLaunchRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.writeFile("work/bad.json", `{"mcpServers":{"s":{"comand":"/bin/true"}}}`)
	w.writeFile("work/mcp.json", `{"mcpServers":{"s":{"command":"/bin/true"}}}`)
	w.writeFile("work/latin1.md", "be\xff brief")
	s := w.startStable("refuse", nil)
	c := s.client()
	cases := []struct {
		name    string
		backend string
		params  map[string]any
		code    int
		msg     string
		refused string // error.data.refused when typed
	}{
		{"mode the backend does not declare", "echo", map[string]any{"permission_mode": "plan"}, -32000,
			`backend "echo" does not support permission_mode (no mode is supported); nothing was started`, "permission_mode"},
		{"appended prompt the backend does not declare", "echo", map[string]any{"append_system_prompt": "be brief"}, -32000,
			`backend "echo" does not support append_system_prompt (launch context field "append_system_prompt"); nothing was started`, "append_system_prompt"},
		{"empty tool list the backend does not declare", "echo", map[string]any{"allowed_tools": []string{}}, -32000,
			`backend "echo" does not support allowed_tools (launch context field "allowed_tools"); nothing was started`, "allowed_tools"},
		{"MCP servers the backend does not declare", "echo", map[string]any{"mcp_config": "mcp.json"}, -32000,
			`backend "echo" does not support mcp_config (launch context field "mcp_servers"); nothing was started`, "mcp_config"},
		{"unknown mode", "scripted", map[string]any{"permission_mode": "yolo"}, -32602,
			`permission_mode: invalid permission mode "yolo"; valid modes: default, accept-edits, plan, full-access`, ""},
		{"allowed_tools neither list nor string", "scripted", map[string]any{"allowed_tools": 7}, -32602,
			`allowed_tools: want an array of tool names`, ""},
		{"allowed_tools entry with a comma", "scripted", map[string]any{"allowed_tools": []string{"Read,Grep"}}, -32602,
			`allowed_tools: entry 1 "Read,Grep" holds a comma`, ""},
		{"@FILE missing", "scripted", map[string]any{"append_system_prompt": "@nope.md"}, -32000,
			"append_system_prompt: open <work>/nope.md: no such file or directory", ""},
		{"@FILE not UTF-8", "scripted", map[string]any{"append_system_prompt": "@latin1.md"}, -32000,
			"append_system_prompt <work>/latin1.md is not valid UTF-8", ""},
		{"mcp_config missing", "scripted", map[string]any{"mcp_config": "nope.json"}, -32000,
			"mcp_config <work>/nope.json: open <work>/nope.json: no such file or directory", ""},
		{"mcp_config malformed", "scripted", map[string]any{"mcp_config": "bad.json"}, -32000,
			`mcp_config <work>/bad.json: not an MCP server definitions file`, ""},
	}
	for _, tc := range cases {
		params := map[string]any{"backend": tc.backend, "dir": w.work, "prompt": "say hi"}
		for k, v := range tc.params {
			params[k] = v
		}
		_, err := spawnLaunch(t, c, params)
		if err == nil {
			t.Errorf("%s: the spawn was not refused", tc.name)
			continue
		}
		re := rpcError(t, err)
		msg := strings.ReplaceAll(tc.msg, "<work>", w.work)
		if re.Code != tc.code || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: got %v (code %d); want code %d with %q", tc.name, err, re.Code, tc.code, msg)
		}
		if tc.refused != "" {
			var data struct {
				Backend        string   `json:"backend"`
				Refused        string   `json:"refused"`
				SupportedModes []string `json:"supported_modes"`
			}
			if err := json.Unmarshal(re.Data, &data); err != nil || data.Backend != tc.backend || data.Refused != tc.refused || data.SupportedModes == nil {
				t.Errorf("%s: error data %s; want backend %q, refused %q and the supported modes", tc.name, re.Data, tc.backend, tc.refused)
			}
		}
	}
	list, err := c.List(ctxT(t, 10*time.Second))
	if err != nil || len(list) != 0 {
		t.Errorf("after refused spawns list is %v (%v); want no runtime", list, err)
	}
}

// TestStableRecoveryKeepsPermissionMode: a runtime spawned in plan, its
// supervisor SIGKILLed while it is parked, runs its follow-up under the
// restarted supervisor still in plan: the broker rejects the write even
// with auto_approve, and the entry lists the mode.
func TestStableRecoveryKeepsPermissionMode(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.writeFile("work/sys.md", "be brief")
	s := w.startStable("recover", nil, "--linger", "30s")
	c := s.client()
	id, err := spawnLaunch(t, c, map[string]any{"backend": "scripted", "dir": w.work, "prompt": "say one", "auto_approve": true,
		"permission_mode": "plan", "append_system_prompt": "@sys.md"})
	if err != nil {
		t.Fatalf("spawn: %v", err)
	}
	rt := waitRuntime(t, c, id, 20*time.Second, "idle", func(rt client.Runtime) bool { return rt.Status == "idle" })
	s.signal(syscall.SIGKILL)
	s.wait()
	// The @FILE goes away: the recovered runtime keeps the text it was
	// spawned with.
	if err := os.Remove(filepath.Join(w.work, "sys.md")); err != nil {
		t.Fatal(err)
	}

	s2 := w.startStable("recover", nil, "--linger", "30s")
	c2 := s2.client()
	after := waitRuntime(t, c2, id, 20*time.Second, "idle after the restart", func(rt client.Runtime) bool { return rt.Status == "idle" })
	var entry map[string]any
	if err := json.Unmarshal(after.Raw, &entry); err != nil || entry["permission_mode"] != "plan" {
		t.Errorf("the recovered runtime's entry %s has no permission_mode plan", after.Raw)
	}
	if err := c2.Prompt(ctxT(t, 10*time.Second), "permission tool=Write", id); err != nil {
		t.Fatalf("follow-up: %v", err)
	}
	if !waitFor(20*time.Second, func() bool { return len(only(readEventsQuiet(rt.EventPath), "session.end")) >= 2 }) {
		t.Fatalf("the follow-up never ended")
	}
	if got := decisions(readEvents(t, rt.EventPath)); got != "mode:reject" {
		t.Errorf("decisions %s; want the follow-up's write rejected by the mode after the restart", got)
	}
	if err := c2.Shutdown(ctxT(t, 10*time.Second), "graceful"); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	s2.exited(0, 20*time.Second)
}

// TestControlSpawnLaunchFlags: `avenor control spawn` takes the permission
// mode and the launch context as flags (@FILE and --mcp-config relative to
// the caller's working directory, --allowed-tools "" allowing no tool),
// and they reach the runtime's session.start.
func TestControlSpawnLaunchFlags(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.writeFile("work/sys.md", "be brief")
	w.writeFile("work/mcp.json", `{"mcpServers":{"files":{"command":"/bin/true"}}}`)
	s := w.startStable("launchflags", nil)
	c := s.client()
	r := w.run("control", "--socket", s.sock, "spawn", "--backend", "scripted", "--dir", w.work,
		"--prompt", "say hi", "--permission-mode", "plan", "--append-system-prompt", "@sys.md",
		"--allowed-tools", "", "--mcp-config", "mcp.json")
	var spawned client.Spawned
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &spawned) != nil || spawned.RuntimeID == "" {
		t.Fatalf("avenor control spawn with launch flags: %v", r)
	}
	rt := waitEnded(t, c, spawned.RuntimeID, 30*time.Second)
	start := only(readEvents(t, rt.EventPath), "session.start")[0]
	if start.str("permission_mode") != "plan" {
		t.Errorf("session.start %v: want permission_mode plan", start)
	}
	if n, _ := start.num("append_system_prompt_length"); n != float64(len("be brief")) {
		t.Errorf("session.start %v: want append_system_prompt_length %d", start, len("be brief"))
	}
	if got, _ := json.Marshal(start["allowed_tools"]); string(got) != `[]` {
		t.Errorf("session.start allowed_tools %s, want [] (--allowed-tools \"\")", got)
	}
	if got, _ := json.Marshal(start["mcp_servers"]); string(got) != `["files"]` {
		t.Errorf("session.start mcp_servers %s, want [\"files\"]", got)
	}
	r = w.run("control", "--socket", s.sock, "spawn", "--backend", "scripted", "--prompt", "say hi", "--permission-mode", "read-only")
	if r.code == 0 || !strings.Contains(r.stderr, "permission_mode") {
		t.Errorf("an unknown --permission-mode was not refused by name: %v", r)
	}
}
