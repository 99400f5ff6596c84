//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// launchRuntimes are the backends that declare every permission mode and
// whose real CLI is installed here: each goes through the mode scenarios.
func launchRuntimes(t *testing.T) []*runtimeSpec {
	installClaude(t)
	needPi(t)
	return []*runtimeSpec{claudeStream, gemini, opencode, opencodeHTTP, piSpec}
}

// planOnly are the backends that declare plan alone (codex-app-server: its
// read-only sandbox).
func planOnly(t *testing.T) []*runtimeSpec {
	codex.bin = func() string { return codexBin(t) }
	return []*runtimeSpec{codex}
}

// writeToolNames are the names runtimes give the tool that writes a file.
var writeToolNames = []string{"Write", "write_file", "write"}

// nativeTools are each runtime's own write and shell tool names: the
// model asks for them even when a mode hides them from the request, so
// that "the model asks for a write and a command" is never vacuous.
var nativeTools = map[string][2]string{
	"claude": {"Write", "Bash"}, "gemini": {"write_file", "run_shell_command"}, "opencode": {"write", "bash"},
	"codex": {"", "shell"}, // Codex writes files through the shell or a patch tool
	"pi":    {"write", "bash"},
}

// editThenCommand is a model that asks for a file write (edit.txt), then a
// shell command (cmd.txt), then says DONE. A tool the request does not
// offer is asked for by the runtime's own name all the same.
func editThenCommand(rt *runtimeSpec, work string) fakellm.Script {
	names := nativeTools[rt.name]
	return func(r *fakellm.Request) fakellm.Reply {
		done := 0
		for _, m := range r.Messages {
			done += len(m.ToolResults)
		}
		switch done {
		case 0:
			for _, name := range writeToolNames {
				if tool, ok := r.Tool(name); ok {
					return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_write", Name: name, Args: writeArgs(tool, filepath.Join(work, "edit.txt"))}}}
				}
			}
			if names[0] == "" {
				return fakellm.Shell("echo edited > edit.txt")
			}
			path := map[string]string{"opencode": "filePath", "pi": "path"}[rt.name]
			if path == "" {
				path = "file_path"
			}
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_write", Name: names[0],
				Args: map[string]any{path: filepath.Join(work, "edit.txt"), "content": "edited\n"}}}}
		case 1:
			if _, ok := r.ShellTool(); ok {
				return fakellm.Shell("echo ran > cmd.txt")
			}
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_shell", Name: names[1],
				Args: map[string]any{"command": "echo ran > cmd.txt", "description": "write cmd.txt"}}}}
		}
		return fakellm.Text("DONE")
	}
}

// writeArgs shapes a write tool's arguments from its schema: the path
// property gets path, the content property "edited\n".
func writeArgs(t fakellm.Tool, path string) map[string]any {
	args := map[string]any{}
	props, _ := t.Schema["properties"].(map[string]any)
	for k := range props {
		switch lk := strings.ToLower(k); {
		case strings.Contains(lk, "path"):
			args[k] = path
		case strings.Contains(lk, "content"):
			args[k] = "edited\n"
		}
	}
	return args
}

// workspace lists the names under dir, recursively, for an unchanged check.
func workspace(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// TestPermissionModes: on every backend that declares the modes, plan
// leaves the workspace unchanged when the model asks for a file write and
// a shell command — with --auto-approve too — and accept-edits lets the
// write through and asks for the command (answered here by --on-permission
// deny, so the command is refused by avenor, not by the mode).
func TestPermissionModes(t *testing.T) {
	plan := planOnly(t)
	for _, rt := range append(launchRuntimes(t), plan...) {
		t.Run(rt.backend, func(t *testing.T) {
			for _, tc := range []struct {
				name string
				args []string
			}{
				{"plan", []string{"--permission-mode", "plan"}},
				{"plan/auto-approve", []string{"--permission-mode", "plan", "--auto-approve"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					w := newWorld(t, rt, fakellm.Config{})
					w.llm.SetScript(editThenCommand(rt, w.work))
					before := workspace(t, w.work)
					run := w.startAvenor("run", append([]string{"--prompt", "Write edit.txt, then run a command."}, tc.args...)...)
					res, evs, s := run.finish()
					if after := workspace(t, w.work); !slices.Equal(before, after) {
						t.Errorf("the workspace changed under plan: %v → %v", before, after)
					}
					if res.code != 0 || s.status != "DONE" {
						t.Errorf("run: %v, sentinel %+v", res, s)
					}
					for _, resp := range only(evs, "permission.response") {
						if resp.str("kind") == "allow" {
							t.Errorf("plan allowed a request: %v", resp)
						}
					}
					if start := only(evs, "session.start"); len(start) != 1 || start[0].str("permission_mode") != "plan" {
						t.Errorf("session.start %v does not record permission_mode plan", start)
					}
				})
			}
			if slices.Contains(plan, rt) {
				return // it declares plan alone: accept-edits is refused before anything starts
			}
			t.Run("accept-edits", func(t *testing.T) {
				w := newWorld(t, rt, fakellm.Config{})
				w.llm.SetScript(editThenCommand(rt, w.work))
				run := w.startAvenor("run", "--prompt", "Write edit.txt, then run a command.",
					"--permission-mode", "accept-edits", "--on-permission", "deny")
				res, evs, s := run.finish()
				if res.code != 0 || s.status != "DONE" {
					t.Errorf("run: %v, sentinel %+v", res, s)
				}
				if got, err := os.ReadFile(filepath.Join(w.work, "edit.txt")); err != nil || string(got) != "edited\n" {
					t.Errorf("edit.txt = %q, %v; accept-edits should have let the write through", got, err)
				}
				if fileExists(filepath.Join(w.work, "cmd.txt")) {
					t.Errorf("cmd.txt exists: the command ran without being asked for")
				}
				asked := false
				for _, resp := range only(evs, "permission.response") {
					if resp.str("source") == "avenor" && resp.str("kind") == "reject" {
						asked = true
					}
				}
				if !asked {
					t.Errorf("the command was not asked for (no permission.response from --on-permission deny): %v", names(evs))
				}
			})
		})
	}
}

// probeServer builds the stdio MCP server of the launch-context tests once.
var probeServer = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "mcpprobe")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "mcpprobe")
	out, err := exec.Command("go", "build", "-o", bin, "./testdata/mcpprobe").CombinedOutput()
	if err != nil {
		return "", &exec.ExitError{Stderr: out}
	}
	return bin, nil
})

// TestLaunchContext: on one backend per protocol family that declares the
// fields, the appended system prompt and the tool list are in the request
// the fake LLM receives, and an MCP server from --mcp-config (a stdio
// server built here, its env resolved from ${NAME}) has its tool in the
// request's tool list and a call reaches it.
func TestLaunchContext(t *testing.T) {
	probe, err := probeServer()
	if err != nil {
		t.Fatalf("building the MCP probe server: %v", err)
	}
	for _, rt := range launchRuntimes(t) {
		t.Run(rt.backend, func(t *testing.T) {
			// The tool list in each runtime's own names, and what the
			// request then offers.
			tools, offered := map[*runtimeSpec][2]string{
				claudeStream: {"Read,Bash", "Bash,Read"}, piSpec: {"read,bash", "bash,read"},
			}[rt]
			if offered {
				t.Run("system-prompt-and-tools", func(t *testing.T) {
					const marker = "AVENOR-STANDING-INSTRUCTIONS-7f3a"
					w := newWorld(t, rt, fakellm.Config{Script: func(*fakellm.Request) fakellm.Reply { return fakellm.Text("DONE") }})
					sys := filepath.Join(w.root, "system.md")
					w.writeFile(sys, "Always answer tersely. "+marker+"\n")
					run := w.startAvenor("run", "--prompt", "Say done.", "--append-system-prompt", "@"+sys, "--allowed-tools", tools[0])
					res, evs, s := run.finish()
					if res.code != 0 || s.status != "DONE" {
						t.Fatalf("run: %v, sentinel %+v", res, s)
					}
					main := w.llm.MainRequests()
					if len(main) == 0 {
						t.Fatal("no request with tools reached the fake LLM")
					}
					if !strings.Contains(main[0].System, marker) {
						t.Errorf("the appended system prompt is not in the request's system prompt (%d bytes)", len(main[0].System))
					}
					var got []string
					for _, tool := range main[0].Tools {
						got = append(got, tool.Name)
					}
					slices.Sort(got)
					if strings.Join(got, ",") != tools[1] {
						t.Errorf("the request offers tools %v; want exactly %s", got, tools[1])
					}
					if start := only(evs, "session.start"); len(start) != 1 || start[0]["append_system_prompt_length"] == nil {
						t.Errorf("session.start %v does not record the launch context", start)
					}
				})
			}
			if rt == piSpec {
				return // pi has no MCP client: --mcp-config is refused before anything starts
			}
			t.Run("mcp-server", func(t *testing.T) {
				w := newWorld(t, rt, fakellm.Config{})
				var (
					mu      sync.Mutex
					offered []string
				)
				w.llm.SetScript(func(r *fakellm.Request) fakellm.Reply {
					if r.AfterToolResult() {
						return fakellm.Text("DONE")
					}
					for _, tool := range r.Tools {
						if strings.Contains(tool.Name, "avenor_probe") {
							mu.Lock()
							offered = append(offered, tool.Name)
							mu.Unlock()
							return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_probe", Name: tool.Name, Args: map[string]any{"text": "reached"}}}}
						}
					}
					var names []string
					for _, tool := range r.Tools {
						names = append(names, tool.Name)
					}
					t.Logf("no probe tool among %v; system prompt mentions mcp: %v", names, strings.Contains(r.System, "mcp"))
					return fakellm.Text("NO PROBE TOOL")
				})
				out := filepath.Join(w.root, "probe.out")
				cfg := filepath.Join(w.root, "mcp.json")
				w.writeFile(cfg, `{"mcpServers":{"probe":{"command":"`+probe+`","env":{"PROBE_OUT":"${AVENOR_E2E_PROBE_OUT}"}}}}`)
				w.env = append(w.env, "AVENOR_E2E_PROBE_OUT="+out)
				if rt == claudeStream {
					// Claude Code defers MCP tools behind its ToolSearch
					// tool by default; off, they are in the tool list.
					w.env = append(w.env, "ENABLE_TOOL_SEARCH=false")
				}
				run := w.startAvenor("run", "--prompt", "Call the probe tool.", "--mcp-config", cfg, "--auto-approve")
				res, evs, s := run.finish()
				if res.code != 0 || s.status != "DONE" {
					t.Errorf("run: %v, sentinel %+v", res, s)
				}
				mu.Lock()
				defer mu.Unlock()
				if len(offered) == 0 {
					t.Fatalf("no request offered the probe server's tool")
				}
				if got, err := os.ReadFile(out); err != nil || string(got) != "reached\n" {
					t.Errorf("probe.out = %q, %v; the call did not reach the MCP server", got, err)
				}
				if start := only(evs, "session.start"); len(start) != 1 || !strings.Contains(strings.Join(anyStrings(start[0]["mcp_servers"]), ","), "probe") {
					t.Errorf("session.start %v does not name the MCP server", start)
				}
				log, _ := os.ReadFile(run.events)
				if strings.Contains(string(log), out) {
					t.Errorf("the MCP server's env value is in the event log")
				}
			})
		})
	}
}

func anyStrings(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// TestLaunchRefusedPerBackend: each mode or field a real backend does not
// declare is refused before its runtime starts: exit 1, a FAILED
// sentinel, a message naming the backend and what it supports, nothing
// left running.
func TestLaunchRefusedPerBackend(t *testing.T) {
	codex.bin = func() string { return codexBin(t) }
	needPi(t)
	mcp := func(w *world) string {
		path := filepath.Join(w.root, "mcp.json")
		w.writeFile(path, `{"mcpServers":{"s":{"command":"/bin/true"}}}`)
		return path
	}
	for _, tc := range []struct {
		rt   *runtimeSpec
		args func(w *world) []string
		msg  string
	}{
		{codex, func(*world) []string { return []string{"--permission-mode", "full-access"} },
			`backend "codex-app-server" does not support permission mode "full-access"; supported modes: accept-edits, plan`},
		{codex, func(w *world) []string { return []string{"--mcp-config", mcp(w)} },
			`backend "codex-app-server" does not support --mcp-config`},
		{gemini, func(*world) []string { return []string{"--append-system-prompt", "be brief"} },
			`backend "gemini-acp" does not support --append-system-prompt`},
		{gemini, func(*world) []string { return []string{"--allowed-tools", "read_file"} },
			`backend "gemini-acp" does not support --allowed-tools`},
		{opencode, func(*world) []string { return []string{"--allowed-tools", ""} },
			`backend "opencode-acp" does not support --allowed-tools`},
		{opencodeHTTP, func(*world) []string { return []string{"--append-system-prompt", "be brief"} },
			`backend "opencode-http" does not support --append-system-prompt`},
		{piSpec, func(w *world) []string { return []string{"--mcp-config", mcp(w)} },
			`backend "pi" does not support --mcp-config`},
	} {
		flag := tc.msg[strings.Index(tc.msg, "support ")+len("support "):]
		t.Run(tc.rt.backend+"/"+strings.Fields(flag)[0], func(t *testing.T) {
			w := newWorld(t, tc.rt, fakellm.Config{})
			run := w.startAvenor("run", append([]string{"--prompt", "hi"}, tc.args(w)...)...)
			res := run.p.wait()
			if res.code != 1 || !strings.Contains(res.stderr, tc.msg) {
				t.Errorf("want exit 1 and %q on stderr; got %v", tc.msg, res)
			}
			if s := readSentinel(t, run.sentinel); s.status != "FAILED" {
				t.Errorf("sentinel %+v, want FAILED", s)
			}
			if n := len(w.llm.Requests()); n != 0 {
				t.Errorf("the runtime reached the fake LLM %d times", n)
			}
		})
	}
}
