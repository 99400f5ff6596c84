package hosttest

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLaunchContextRefused: a permission mode or launch-context field a
// backend does not declare, and bad launch-context input, are refused
// before any turn runs: exit 1, a FAILED sentinel, one clear message.
func TestLaunchContextRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		backend string
		env     []string
		setup   func(w *world) []string
		msg     string // stderr after "avenor: "; <root> is the world's root
	}{
		{"mode the backend does not declare", "echo", nil, func(w *world) []string {
			return []string{"--permission-mode", "plan"}
		}, `backend "echo" does not support --permission-mode (no mode is supported)`},
		{"unknown mode", "scripted", nil, func(w *world) []string {
			return []string{"--permission-mode", "yolo"}
		}, `--permission-mode: invalid permission mode "yolo"; valid modes: default, accept-edits, plan, full-access`},
		{"appended system prompt the backend does not declare", "echo", nil, func(w *world) []string {
			return []string{"--append-system-prompt", "be brief"}
		}, `backend "echo" does not support --append-system-prompt (launch context field "append_system_prompt")`},
		{"empty tool list the backend does not declare", "echo", nil, func(w *world) []string {
			return []string{"--allowed-tools", ""}
		}, `backend "echo" does not support --allowed-tools (launch context field "allowed_tools")`},
		{"MCP servers the backend does not declare", "echo", nil, func(w *world) []string {
			return []string{"--mcp-config", w.writeFile("mcp.json", `{"mcpServers":{"s":{"command":"/bin/true"}}}`)}
		}, `backend "echo" does not support --mcp-config (launch context field "mcp_servers")`},
		{"@FILE missing", "scripted", nil, func(w *world) []string {
			return []string{"--append-system-prompt", "@" + w.path("nope.md")}
		}, "--append-system-prompt: open <root>/nope.md: no such file or directory"},
		{"@FILE not UTF-8", "scripted", nil, func(w *world) []string {
			return []string{"--append-system-prompt", "@" + w.writeFile("sys.md", "be\xff brief")}
		}, "--append-system-prompt <root>/sys.md is not valid UTF-8 (byte 0xff at offset 2); prompts are sent as text: convert it to UTF-8 (e.g. iconv -t UTF-8)"},
		{"--mcp-config missing", "scripted", nil, func(w *world) []string {
			return []string{"--mcp-config", w.path("nope.json")}
		}, "--mcp-config <root>/nope.json: open <root>/nope.json: no such file or directory"},
		{"--mcp-config malformed", "scripted", nil, func(w *world) []string {
			return []string{"--mcp-config", w.writeFile("mcp.json", `{"mcpServers":{"s":{"comand":"/bin/true"}}}`)}
		}, `--mcp-config <root>/mcp.json: not an MCP server definitions file ({"mcpServers": {"<name>": {...}}}): json: unknown field "comand"`},
		{"--mcp-config names an unset variable", "scripted", nil, func(w *world) []string {
			return []string{"--mcp-config", w.writeFile("mcp.json", `{"mcpServers":{"s":{"command":"/bin/true","env":{"TOKEN":"${AVENOR_TEST_UNSET_TOKEN}"}}}}`)}
		}, `--mcp-config <root>/mcp.json: server "s": env TOKEN: environment variable AVENOR_TEST_UNSET_TOKEN is not set; export it before the run`},
		{"--mcp-config server with neither command nor url", "scripted", nil, func(w *world) []string {
			return []string{"--mcp-config", w.writeFile("mcp.json", `{"mcpServers":{"s":{}}}`)}
		}, `--mcp-config <root>/mcp.json: server "s": give a command (stdio) or a url (http)`},
		{"--allowed-tools with an empty entry", "scripted", nil, func(w *world) []string {
			return []string{"--allowed-tools", "Read,,Bash"}
		}, `--allowed-tools: entry 2 is empty; give tool names separated by commas, or "" for no tool`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			args := append([]string{"--backend", tc.backend, "--dir", w.work, "--prompt", "say hi"}, tc.setup(w)...)
			sent := w.path("run.done")
			res := w.runEnv(tc.env, append(args, "--sentinel-file", sent, "--run-id", "b")...)
			msg := strings.ReplaceAll(tc.msg, "<root>", w.root)
			if res.code != 1 || !strings.Contains(res.stderr, "avenor: "+msg+"\n") {
				t.Fatalf("want exit 1 and stderr with %q; got %v", msg, res)
			}
			checkSentinel(t, sent, validationSentinel(msg, "b"))
		})
	}
}

// TestPermissionModeThroughTheBroker: under --permission-mode plan the
// broker rejects an edit and a command even with --auto-approve (source
// "mode"); under accept-edits it allows the edit and leaves the command to
// the precedence. session.start records the mode and what it allows.
func TestPermissionModeThroughTheBroker(t *testing.T) {
	t.Parallel()
	script := "permission tool=Write\npermission tool=Bash\n"
	for _, tc := range []struct {
		mode    string
		extra   []string
		says    string // the turn's message text
		sources []string
		allows  map[string]any
	}{
		{"plan", []string{"--auto-approve"}, "permission deny (reject)permission deny (reject)", []string{"mode", "mode"},
			map[string]any{"edits": "deny", "commands": "deny"}},
		{"accept-edits", []string{"--on-permission", "deny"}, "permission allow (allow_once)permission deny (reject)", []string{"mode", "avenor"},
			map[string]any{"edits": "allow", "commands": "ask"}},
		{"full-access", nil, "permission allow (allow_once)permission allow (allow_once)", []string{"mode", "mode"},
			map[string]any{"edits": "allow", "commands": "allow"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			evPath := w.path("events.ndjson")
			args := append([]string{"--backend", "scripted", "--dir", w.work, "--prompt", script,
				"--permission-mode", tc.mode, "--on-event", evPath}, tc.extra...)
			res := w.run(args...)
			if res.code != 0 {
				t.Fatalf("run: %v", res)
			}
			evs := readEvents(t, evPath)
			start := only(evs, "session.start")[0]
			if start.str("permission_mode") != tc.mode || !equalJSON(start["permission_allows"], tc.allows) {
				t.Errorf("session.start %v; want permission_mode %s allows %v", start, tc.mode, tc.allows)
			}
			var sources []string
			for _, ev := range only(evs, "permission.response") {
				sources = append(sources, ev.str("source"))
			}
			if strings.Join(sources, ",") != strings.Join(tc.sources, ",") {
				t.Errorf("permission.response sources %v; want %v", sources, tc.sources)
			}
			var said strings.Builder
			for _, ev := range only(evs, "agent.message_chunk") {
				content, _ := ev["content"].(map[string]any)
				text, _ := content["text"].(string)
				said.WriteString(strings.TrimSpace(text))
			}
			if said.String() != tc.says {
				t.Errorf("the turn said %q; want %q", said.String(), tc.says)
			}
		})
	}
}

// TestLaunchContextAbsentIsToday: without the new flags session.start has
// none of the new fields.
func TestLaunchContextAbsentIsToday(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evPath := w.path("events.ndjson")
	if res := w.run("--backend", "scripted", "--dir", w.work, "--prompt", "say hi", "--on-event", evPath); res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	start := only(readEvents(t, evPath), "session.start")[0]
	for _, k := range []string{"permission_mode", "permission_allows", "allowed_tools", "mcp_servers", "append_system_prompt_length"} {
		if _, ok := start[k]; ok {
			t.Errorf("session.start has %s without the flag: %v", k, start)
		}
	}
}

// equalJSON compares a decoded JSON value with a map.
func equalJSON(got any, want map[string]any) bool {
	m, ok := got.(map[string]any)
	if !ok || len(m) != len(want) {
		return false
	}
	for k, v := range want {
		if m[k] != v {
			return false
		}
	}
	return true
}

// TestPermissionModeInEveryPhase: a team run's members run under the run's
// permission mode: plan rejects a member's edit even with --auto-approve.
func TestPermissionModeInEveryPhase(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	cfg := w.writeConfig("team.json", map[string]any{"team": []phase{
		{"name": "a", "prompt": "permission tool=Write"}, {"name": "b", "prompt": "permission tool=Bash"}}})
	run := w.workflow("deadbeefcafe10aa", "--team-file", cfg, "--permission-mode", "plan", "--auto-approve")
	if run.res.code != 0 {
		t.Fatalf("run: %v", run.res)
	}
	resps := only(run.evs, "permission.response")
	if len(resps) != 2 {
		t.Fatalf("%d permission.response events, want 2: %v", len(resps), names(run.evs))
	}
	for _, r := range resps {
		if r.str("source") != "mode" || r.str("kind") != "reject" {
			t.Errorf("a member's request was decided %v; want rejected by the mode", r)
		}
	}
	for _, s := range only(run.evs, "session.start") {
		if s.str("permission_mode") != "plan" {
			t.Errorf("a member's session.start %v lacks permission_mode plan", s)
		}
	}
}

// TestBackendsJSONListsLaunchCapabilities: `avenor backends --json` says
// per backend which permission modes and launch-context fields it honours.
func TestBackendsJSONListsLaunchCapabilities(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	res := w.run("backends", "--json")
	if res.code != 0 {
		t.Fatalf("%v", res)
	}
	var rows []struct {
		Backend      string            `json:"backend"`
		Capabilities map[string]string `json:"capabilities"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &rows); err != nil {
		t.Fatalf("backends --json: %v\n%s", err, res.stdout)
	}
	want := map[string]string{"echo": "unsupported", "scripted": "supported"}
	for _, r := range rows {
		if w, ok := want[r.Backend]; ok {
			for _, c := range []string{"permission_mode_plan", "append_system_prompt", "allowed_tools", "mcp_servers"} {
				if r.Capabilities[c] != w {
					t.Errorf("%s: capability %s = %q, want %q", r.Backend, c, r.Capabilities[c], w)
				}
			}
			delete(want, r.Backend)
		}
	}
	if len(want) != 0 {
		t.Errorf("backends --json lists none of %v", want)
	}
}
