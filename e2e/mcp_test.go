//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/e2e/fakellm"
)

// The code words of TestMCPAgentOrchestratesAgent: the parent's prompt,
// the runtime child's prompt and answer, and the parent's final line.
const (
	mcpParentTask = "PARENT-TASK: delegate to two children through avenor"
	mcpEchoPrompt = "hello from the parent; ask permission first"
	mcpChildTask  = "CHILD-TASK: reply with the code word"
	mcpChildWord  = "CHILD-ANSWER-42"
	mcpFinalHead  = "PARENT-FINAL"
)

var (
	reRunID  = regexp.MustCompile(`\\?"run_id\\?"\s*:\s*\\?"([0-9a-f]{16}|[0-9a-f-]{36})\\?"`)
	reStatus = regexp.MustCompile(`\\?"status\\?"\s*:\s*\\?"([a-z]+)\\?"`)
)

// mcpOutput reads the output of an avenor_result tool result (the JSON
// the MCP server returned, as the runtime passed it on; Claude Code
// appends a <system-reminder> after it).
func mcpOutput(s string) string {
	var m map[string]any
	if json.NewDecoder(strings.NewReader(s)).Decode(&m) == nil {
		if o, ok := m["output"].(string); ok {
			return o
		}
	}
	// Some runtimes quote the tool's JSON once more.
	var inner string
	if json.Unmarshal([]byte(s), &inner) == nil {
		return mcpOutput(inner)
	}
	return ""
}

// parentScript scripts the parent agent (a real runtime talking to avenor
// mcp): spawn an echo child whose turn asks permission, wait for it
// (avenor_result stops at the request), answer it
// (avenor_answer_permission), take its output; spawn a child on the
// runtime's own backend, take its output; end with a final text that
// carries both outputs. Each step follows from the tool results so far.
type parentScript struct {
	work string
	// child is the second child's backend; childName names it in the
	// final text.
	child, childName string
	mu               sync.Mutex
	log              []string // the transcript: calls and results, for the closing note
	// outputs are the avenor_result outputs seen, by tool result index:
	// Claude Code clears old tool results from the conversation it sends.
	outputs map[int]string
}

// output is the output of the i-th tool result, as first seen.
func (p *parentScript) output(results []string, i int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.outputs == nil {
		p.outputs = map[int]string{}
	}
	for j, r := range results {
		if _, ok := p.outputs[j]; !ok {
			if o := mcpOutput(r); o != "" {
				p.outputs[j] = o
			}
		}
	}
	return p.outputs[i]
}

func (p *parentScript) reply(r *fakellm.Request) fakellm.Reply {
	if strings.Contains(r.LastUserText(), mcpChildTask) || (!r.Contains(mcpParentTask) && r.Contains(mcpChildTask)) {
		return fakellm.Text(mcpChildWord)
	}
	if !r.Contains(mcpParentTask) {
		return fakellm.Text("DONE")
	}
	tool := func(suffix string) string {
		for _, t := range r.Tools {
			if strings.HasSuffix(t.Name, suffix) {
				return t.Name
			}
		}
		return ""
	}
	var results []string
	for _, m := range r.Messages {
		for _, res := range m.ToolResults {
			results = append(results, res.Output)
		}
	}
	last := ""
	if len(results) > 0 {
		last = results[len(results)-1]
	}
	runIDOf := func(s string) string {
		if m := reRunID.FindStringSubmatch(s); m != nil {
			return m[1]
		}
		return ""
	}
	call := func(name string, args map[string]any) fakellm.Reply {
		full := tool(name)
		if full == "" {
			var names []string
			for _, t := range r.Tools {
				names = append(names, t.Name)
			}
			return fakellm.Text("NO-TOOL " + name + " among " + strings.Join(names, " "))
		}
		b, _ := json.Marshal(args)
		p.note(fmt.Sprintf("parent → %s %s", name, b))
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: fmt.Sprintf("call_%d", len(results)+1), Name: full, Args: args}}}
	}
	if last != "" {
		p.note("parent ← " + truncateNote(last))
	}
	p.output(results, 0) // remember what this request still carries
	switch len(results) {
	case 0:
		return call("avenor_spawn", map[string]any{"repo_dir": p.work, "backend": "echo", "prompt": mcpEchoPrompt, "label": "echo-kid"})
	case 1:
		return call("avenor_result", map[string]any{"run_id": runIDOf(results[0]), "timeout": "60s"})
	case 2:
		if m := reStatus.FindStringSubmatch(last); m == nil || m[1] != "waiting" {
			return fakellm.Text("UNEXPECTED no permission request: " + last)
		}
		return call("avenor_answer_permission", map[string]any{"run_id": runIDOf(results[0]), "option_id": "allow_once"})
	case 3:
		return call("avenor_result", map[string]any{"run_id": runIDOf(results[0]), "timeout": "60s"})
	case 4:
		return call("avenor_spawn", map[string]any{"repo_dir": p.work, "backend": p.child, "prompt": mcpChildTask, "label": p.childName + "-kid"})
	case 5:
		return call("avenor_result", map[string]any{"run_id": runIDOf(results[4]), "timeout": "150s"})
	}
	final := fmt.Sprintf("%s echo child said [%s] and %s child said [%s]", mcpFinalHead, p.output(results, 3), p.childName, p.output(results, 5))
	p.note("parent final text: " + final)
	return fakellm.Text(final)
}

func (p *parentScript) note(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.log); n > 0 && p.log[n-1] == s {
		return // a retried request
	}
	p.log = append(p.log, s)
}

func truncateNote(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}

// TestMCPAgentOrchestratesAgent: a real opencode (opencode-acp, through
// `avenor run`) has `avenor mcp` as an MCP server; the fake LLM makes it
// spawn a child on the echo backend whose permission request it answers
// with avenor_answer_permission, then a child on a real opencode-acp, take
// both results with avenor_result and put them in its own final text. The
// test checks that text, the children's logs and sentinels, and that
// nothing is left running once the supervisor is shut down.
func TestMCPAgentOrchestratesAgent(t *testing.T) {
	if _, err := os.Stat(filepath.Join(bins.dir, "avenor-plugin-opencode")); err != nil {
		t.Fatalf("avenor-plugin-opencode is not built: %v", err)
	}
	orchestrate(t, opencode, &parentScript{child: "opencode-acp", childName: "opencode"}, func(w *world, sock string) {
		// opencode's config gains avenor mcp as a local MCP server.
		editJSON(w, filepath.Join(w.config, "opencode", "opencode.json"), func(cfg map[string]any) {
			cfg["mcp"] = map[string]any{"avenor": map[string]any{"type": "local", "enabled": true,
				"command": []string{bins.avenor, "mcp", "--control-socket", sock}}}
		})
	})
}

// TestMCPAgentOrchestratesAgentClaudeStream: the same with a real Claude
// Code as the parent (claude-stream, through `avenor run`), `avenor mcp` a
// user-scope MCP server in its ~/.claude.json, and the second child a
// claude-stream runtime too.
func TestMCPAgentOrchestratesAgentClaudeStream(t *testing.T) {
	if _, err := os.Stat(filepath.Join(bins.dir, "avenor-plugin-claude")); err != nil {
		t.Fatalf("avenor-plugin-claude is not built: %v", err)
	}
	installClaude(t)
	orchestrate(t, claudeStream, &parentScript{child: "claude-stream", childName: "claude"}, func(w *world, sock string) {
		// Claude Code defers MCP tools behind its ToolSearch tool; the
		// script calls them by name, so they are offered directly.
		w.env = append(w.env, "ENABLE_TOOL_SEARCH=false")
		// The world's environment is given to the server explicitly (the
		// last entry of a variable wins, as for exec): avenor mcp, its
		// supervisor and the claude child need the fake API, the plugin
		// path and the world's XDG directories whatever Claude Code passes
		// on to its MCP servers.
		env := map[string]string{}
		for _, kv := range w.env {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
		editJSON(w, filepath.Join(w.home, ".claude.json"), func(cfg map[string]any) {
			cfg["mcpServers"] = map[string]any{"avenor": map[string]any{"type": "stdio", "command": bins.avenor,
				"args": []string{"mcp", "--control-socket", sock}, "env": env}}
		})
	})
}

// editJSON rewrites the JSON object file at path with edit applied.
func editJSON(w *world, path string, edit func(map[string]any)) {
	w.t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		w.t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		w.t.Fatalf("%s: %v", path, err)
	}
	edit(cfg)
	b, _ = json.MarshalIndent(cfg, "", "  ")
	w.writeFile(path, string(b))
}

// orchestrate runs TestMCPAgentOrchestratesAgent's scenario with rt as the
// parent; addMCP makes avenor mcp, with its supervisor at sock, one of the
// parent runtime's MCP servers.
func orchestrate(t *testing.T, rt *runtimeSpec, ps *parentScript, addMCP func(w *world, sock string)) {
	w := newWorld(t, rt, fakellm.Config{Script: ps.reply, Logf: t.Logf})
	ps.work = w.work
	sock := filepath.Join(w.tmp, "mcp-sup.sock")
	addMCP(w, sock)
	t.Cleanup(func() { shutdownSupervisor(t, sock) })

	r := w.startAvenor("parent", "--prompt", mcpParentTask, "--auto-approve")
	res := r.p.wait()
	evs := readEvents(t, r.events)
	end := checkSessionEnd(t, "parent", evs, "end_turn")
	final := end.str("final_output")
	t.Logf("transcript:\n%s", strings.Join(ps.log, "\n"))
	wantFinal := fmt.Sprintf("%s echo child said [echo (turn 1): %s\nI wrote reply.txt.] and %s child said [%s]", mcpFinalHead, mcpEchoPrompt, ps.childName, mcpChildWord)
	if res.code != 0 || !strings.Contains(final, wantFinal) {
		t.Fatalf("parent final text %q, want %q\n%v", final, wantFinal, res)
	}
	// The children's logs and sentinels, from the registry's artifacts.
	logs, _ := filepath.Glob(filepath.Join(w.state, "avenor", "mcp", "*", "artifacts", "avenor-run-*.log"))
	if len(logs) != 2 {
		t.Fatalf("child logs %v, want 2", logs)
	}
	var outputs []string
	for _, l := range logs {
		cev := readEvents(t, l)
		cend := checkSessionEnd(t, filepath.Base(l), cev, "end_turn")
		outputs = append(outputs, cend.str("final_output"))
		s := readSentinel(t, strings.TrimSuffix(l, ".log")+".done")
		if s.status != "DONE" || s.session == "" {
			t.Errorf("%s: sentinel %q", l, s.raw)
		}
		if strings.Contains(cend.str("final_output"), "ask permission") {
			checkPermission(t, "echo child", cev, "allow", "control")
		}
	}
	joined := strings.Join(outputs, "|")
	if !strings.Contains(joined, mcpChildWord) || !strings.Contains(joined, mcpEchoPrompt) {
		t.Errorf("child outputs %q", joined)
	}
	if b, err := os.ReadFile(filepath.Join(w.work, "reply.txt")); err != nil || !strings.Contains(string(b), mcpEchoPrompt) {
		t.Errorf("the echo child's allowed write: %q %v", b, err)
	}
	shutdownSupervisor(t, sock)
	r.p.checkNoLeftovers()
	// Whatever the sampler may have missed (the supervisor runs in a
	// session of its own): no process may still name this world.
	if !waitFor(10*time.Second, func() bool { return len(worldProcesses(w)) == 0 }) {
		for pid, cmd := range worldProcesses(w) {
			t.Errorf("left running: %d %s", pid, cmd)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// worldProcesses are the living processes whose command line names the
// world's root or TMPDIR (the supervisor's socket, the runtimes' dirs).
func worldProcesses(w *world) map[int]string {
	out := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		if _, _, st, ok := statOf(pid); ok && st == "Z" {
			continue
		}
		if strings.Contains(cmd, w.root) || strings.Contains(cmd, w.tmp) {
			out[pid] = cmd
		}
	}
	return out
}

// shutdownSupervisor stops the supervisor avenor mcp autostarted at sock
// (it outlives the MCP server by design) and waits for its socket to go.
func shutdownSupervisor(t *testing.T, sock string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, sock)
	if err != nil {
		return
	}
	_ = c.Shutdown(ctx, "graceful")
	c.Close()
	if !waitFor(20*time.Second, func() bool { return !fileExists(sock) }) {
		t.Errorf("the supervisor at %s did not stop", sock)
	}
}
