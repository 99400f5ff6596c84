package ocacp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avenor-go/avenor/sdk/acp/acptest"
	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/runtime"
)

var fakeAgent string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ocacp-test-")
	if err != nil {
		panic(err)
	}
	if fakeAgent, err = acptest.FakeAgent(dir, "opencode"); err != nil {
		println(err.Error())
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		return m.Run()
	}()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			println("goleak:", err.Error())
			code = 1
		}
	}
	os.Exit(code)
}

// world is one test's agent: its directory, state and log.
type world struct {
	t    *testing.T
	dir  string
	log  string
	env  map[string]string
	opts map[string]any
}

func newWorld(t *testing.T) *world {
	tmp := t.TempDir()
	w := &world{t: t, dir: filepath.Join(tmp, "ws"), log: filepath.Join(tmp, "agent.log"), opts: map[string]any{"binary": fakeAgent}}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w.env = map[string]string{
		"FAKEACP_PROFILE": "opencode", "FAKEACP_STATE": filepath.Join(tmp, "state"), "FAKEACP_LOG": w.log,
		"XDG_CONFIG_HOME": filepath.Join(tmp, "config"), "HOME": tmp,
	}
	return w
}

// open opens a session through the plugin served in-process over gRPC.
func (w *world) open(req runtime.OpenRequest, h *acptest.Host) (runtime.Session, error) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := plugin.ServeInProcess(ctx, plugin.Info{Name: "opencode", Version: "test"}, nil, New())
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(c.Kill)
	b, ok := c.Backend(Name)
	if !ok {
		w.t.Fatalf("no backend %s", Name)
	}
	req.Backend, req.Dir = Name, w.dir
	if req.Options == nil {
		req.Options = w.opts
	}
	if req.Env == nil {
		req.Env = w.env
	}
	sess, err := b.Open(ctx, req, h)
	if err == nil {
		w.t.Cleanup(func() { _ = sess.Close(context.Background()) })
	}
	return sess, err
}

func prompt(t *testing.T, s runtime.Session, text string) runtime.TurnResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.Prompt(ctx, runtime.Turn{ID: "1", Text: text})
	if err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	return res
}

func TestAllowAndReject(t *testing.T) {
	for _, tc := range []struct {
		kind string
		file bool
	}{{"allow", true}, {"reject", false}} {
		t.Run(tc.kind, func(t *testing.T) {
			w := newWorld(t)
			h := &acptest.Host{Decide: acptest.ByKind(tc.kind)}
			s, err := w.open(runtime.OpenRequest{}, h)
			if err != nil {
				t.Fatal(err)
			}
			res := prompt(t, s, "Create out.txt containing hello using the shell.")
			if res.StopReason != runtime.StopEndTurn || res.Usage == nil || res.Usage.TotalTokens == 0 {
				t.Errorf("result %+v", res)
			}
			_, err = os.Stat(filepath.Join(w.dir, "out.txt"))
			if (err == nil) != tc.file {
				t.Errorf("out.txt exists: %v; want %v", err == nil, tc.file)
			}
			types := fmt.Sprint(h.Types())
			if !strings.Contains(types, "tool.call tool.call_update permission.request tool.call_update") {
				t.Errorf("events %s", types)
			}
			reqs := h.Requests()
			if len(reqs) != 1 || reqs[0].ID != "0" || reqs[0].Tool != "bash" || len(reqs[0].Options) != 3 {
				t.Errorf("permission requests %+v", reqs)
			}
			if p := s.Process(); p.PGID <= 1 || p.Version == "" {
				t.Errorf("process %+v", p)
			}
		})
	}
}

func TestLaunchLine(t *testing.T) {
	w := newWorld(t)
	h := &acptest.Host{}
	s, err := w.open(runtime.OpenRequest{}, h)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close(context.Background())
	log := acptest.ReadLog(t, w.log)
	argv, _ := json.Marshal(log[0]["argv"])
	if want, _ := json.Marshal([]string{"acp", "--pure", "--log-level", "WARN", "--cwd", w.dir}); string(argv) != string(want) {
		t.Errorf("argv %s; want %s", argv, want)
	}
	if log[0]["cwd"] != w.dir {
		t.Errorf("cwd %v", log[0]["cwd"])
	}
	if got := strings.Join(acptest.Methods(log), ","); got != "initialize,session/new" {
		t.Errorf("methods %s", got)
	}
	if len(h.Processes()) == 0 || h.Processes()[0].PGID <= 1 {
		t.Errorf("processes recorded: %+v", h.Processes())
	}
}

func TestCancel(t *testing.T) {
	w := newWorld(t)
	var s runtime.Session
	h := &acptest.Host{}
	cancelled := make(chan struct{})
	h.OnEvent = func(ev runtime.Event) {
		if ev.Type == runtime.EventMessageChunk && strings.Contains(ev.Fields["content"].(map[string]any)["text"].(string), "tick 1") {
			select {
			case <-cancelled:
			default:
				close(cancelled)
				go s.Cancel(context.Background())
			}
		}
	}
	var err error
	if s, err = w.open(runtime.OpenRequest{}, h); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res := prompt(t, s, "answer SLOW")
	if res.StopReason != runtime.StopCancelled || time.Since(start) > 10*time.Second {
		t.Errorf("result %+v after %s", res, time.Since(start))
	}
	// The session goes on after a cancelled turn.
	if res := prompt(t, s, "hello"); res.StopReason != runtime.StopEndTurn || !strings.Contains(h.FinalText(), "ECHO: hello") {
		t.Errorf("next turn %+v, text %q", res, h.FinalText())
	}
}

func TestResumeAndModel(t *testing.T) {
	w := newWorld(t)
	s, err := w.open(runtime.OpenRequest{}, &acptest.Host{})
	if err != nil {
		t.Fatal(err)
	}
	prompt(t, s, "remember pelican")
	id := s.ID()
	_ = s.Close(context.Background())

	h := &acptest.Host{}
	s2, err := w.open(runtime.OpenRequest{ResumeSessionID: id, Model: "fake/other-model"}, h)
	if err != nil {
		t.Fatal(err)
	}
	if s2.ID() != id {
		t.Errorf("resumed id %q; want %q", s2.ID(), id)
	}
	prompt(t, s2, "RECALL")
	if got := h.FinalText(); got != "HISTORY: remember pelican" {
		t.Errorf("recall %q", got)
	}
	methods := strings.Join(acptest.Methods(acptest.ReadLog(t, w.log)), ",")
	if !strings.Contains(methods, "initialize,session/resume,session/set_config_option,session/prompt") {
		t.Errorf("methods %s", methods)
	}
	if _, err := w.open(runtime.OpenRequest{ResumeSessionID: "ses_nosuch"}, &acptest.Host{}); runtime.FaultOf(err) != runtime.FaultUser || !strings.Contains(err.Error(), "session not found") {
		t.Errorf("unknown session: %v", err)
	}
}

// --agent without --model takes the model from OpenCode's config; a
// subagent gets a per-run config that makes it selectable, removed after.
func TestAgentFromConfig(t *testing.T) {
	w := newWorld(t)
	if err := os.Mkdir(filepath.Join(w.dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `{
	  // project config
	  "agent": {"reviewer": {"mode": "subagent", "model": "fake/other-model",},},
	}`
	if err := os.WriteFile(filepath.Join(w.dir, "opencode.jsonc"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	w.env["FAKEACP_AGENTS"] = "reviewer"
	w.env["OPENCODE_CONFIG_CONTENT"] = `{"share":"disabled"}`
	s, err := w.open(runtime.OpenRequest{Agent: "reviewer", RunID: "run42"}, &acptest.Host{})
	if err != nil {
		t.Fatal(err)
	}
	log := acptest.ReadLog(t, w.log)
	env, _ := log[0]["env"].(map[string]any)
	path, _ := env["OPENCODE_CONFIG"].(string)
	data, err := os.ReadFile(path)
	if m, _ := filepath.Match("avenor-opencode-acp-run42-*.json", filepath.Base(path)); err != nil || !m {
		t.Fatalf("per-run config %q: %v", path, err)
	}
	var perRun map[string]any
	_ = json.Unmarshal(data, &perRun)
	if perRun["share"] != "disabled" || perRun["agent"].(map[string]any)["reviewer"].(map[string]any)["mode"] != "all" {
		t.Errorf("per-run config %s", data)
	}
	if c, _ := env["OPENCODE_CONFIG_CONTENT"].(string); !strings.Contains(c, `"mode":"all"`) || !strings.Contains(c, `"share":"disabled"`) {
		t.Errorf("OPENCODE_CONFIG_CONTENT %s", c)
	}
	var set []string
	for _, m := range log {
		if m["method"] == "session/set_config_option" {
			p := m["params"].(map[string]any)
			set = append(set, p["configId"].(string)+"="+p["value"].(string))
		}
	}
	if strings.Join(set, ",") != "mode=reviewer,model=fake/other-model" {
		t.Errorf("set %v", set)
	}
	_ = s.Close(context.Background())
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("per-run config not removed: %v", err)
	}
	if _, err := w.open(runtime.OpenRequest{Agent: "nosuch"}, &acptest.Host{}); runtime.FaultOf(err) != runtime.FaultUser || !strings.Contains(err.Error(), `agent "nosuch" is not offered`) {
		t.Errorf("unknown agent: %v", err)
	}
}

func TestRefusesServerURL(t *testing.T) {
	w := newWorld(t)
	if _, err := w.open(runtime.OpenRequest{ServerURL: "http://127.0.0.1:4096"}, &acptest.Host{}); runtime.FaultOf(err) != runtime.FaultUser || !strings.Contains(err.Error(), "use --backend opencode-http") {
		t.Errorf("--server-url: %v", err)
	}
	w.env[ServerURLEnv] = "http://127.0.0.1:4096"
	if _, err := w.open(runtime.OpenRequest{}, &acptest.Host{}); err == nil || !strings.Contains(err.Error(), ServerURLEnv) {
		t.Errorf("%s: %v", ServerURLEnv, err)
	}
}

func TestCheck(t *testing.T) {
	b := New()
	r := b.Check(context.Background(), runtime.CheckRequest{Backend: Name, Options: map[string]any{"binary": fakeAgent}})
	if !r.Ready || !strings.HasPrefix(r.Version, "1.0.0") || r.Binary != fakeAgent {
		t.Errorf("readiness %+v", r)
	}
	r = b.Check(context.Background(), runtime.CheckRequest{Backend: Name, Options: map[string]any{"binary": "opencode-nosuch"}})
	if r.Ready || !strings.Contains(r.Message, "npm install -g opencode-ai") {
		t.Errorf("missing binary: %+v", r)
	}
	w := newWorld(t)
	w.opts = map[string]any{"binary": "opencode-nosuch"}
	if _, err := w.open(runtime.OpenRequest{}, &acptest.Host{}); runtime.FaultOf(err) != runtime.FaultRuntime || !strings.Contains(err.Error(), `"opencode-nosuch" was not found in PATH; install it with: npm install -g opencode-ai`) {
		t.Errorf("Open without the binary: %v", err)
	}
	info := b.Info()
	if info.Capability(runtime.CapModelSelection) != runtime.Supported || info.ResumeScope != runtime.ResumeCrossProcess || len(info.EventTypes) == 0 {
		t.Errorf("info %+v", info)
	}
}

// The permission mode becomes permission.edit and permission.bash in the
// inline config, top level and on the session's agent, keeping what the
// inline config already said; the MCP servers go to session/new.
func TestPermissionModeAndMCP(t *testing.T) {
	w := newWorld(t)
	w.env["OPENCODE_CONFIG_CONTENT"] = `{"model":"fake/fake-model"}`
	servers := []runtime.MCPServer{{Name: "files", Type: runtime.MCPStdio, Command: "/bin/files"}}
	s, err := w.open(runtime.OpenRequest{PermissionMode: runtime.ModePlan, Launch: runtime.LaunchContext{MCPServers: servers}}, &acptest.Host{})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close(context.Background())
	log := acptest.ReadLog(t, w.log)
	env, _ := log[0]["env"].(map[string]any)
	content, _ := env["OPENCODE_CONFIG_CONTENT"].(string)
	var cfg map[string]any
	if err := json.Unmarshal([]byte(content), &cfg); err != nil {
		t.Fatalf("OPENCODE_CONFIG_CONTENT %q: %v", content, err)
	}
	want := `{"agent":{"build":{"permission":{"bash":"deny","edit":"deny"}}},"model":"fake/fake-model","permission":{"bash":"deny","edit":"deny"}}`
	if got, _ := json.Marshal(cfg); string(got) != want {
		t.Errorf("OPENCODE_CONFIG_CONTENT = %s\nwant %s", got, want)
	}
	for _, m := range log[1:] {
		if m["method"] == "session/new" {
			if got, _ := json.Marshal(m["params"].(map[string]any)["mcpServers"]); string(got) != `[{"args":[],"command":"/bin/files","env":[],"name":"files"}]` {
				t.Errorf("session/new mcpServers = %s", got)
			}
		}
	}
}

// Under a workspace sandbox the agent is launched inside bwrap, and
// opencode's own XDG directories are created to stay writable.
func TestOpensInsideSandbox(t *testing.T) {
	if _, err := exec.LookPath(agentproc.BwrapBinary); err != nil {
		if os.Getenv("AVENOR_REQUIRE_SANDBOX") != "" {
			t.Fatal("AVENOR_REQUIRE_SANDBOX is set but bwrap is not on PATH")
		}
		t.Skip("bubblewrap not installed")
	}
	w := newWorld(t)
	tmp := filepath.Dir(w.dir)
	h := &acptest.Host{}
	sb := runtime.Sandbox{Profile: runtime.SandboxWorkspace, Mechanism: runtime.MechanismBubblewrap, Writable: []string{tmp}}
	if _, err := w.open(runtime.OpenRequest{Sandbox: sb}, h); err != nil {
		t.Fatal(err)
	}
	procs := h.Processes()
	if len(procs) == 0 {
		t.Fatal("no process recorded")
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", procs[0].PID))
	if err != nil {
		t.Fatal(err)
	}
	if argv := strings.Split(string(cmdline), "\x00"); argv[0] != agentproc.BwrapBinary {
		t.Errorf("the agent was launched as %q, not inside bwrap", argv)
	}
	if _, err := os.Stat(filepath.Join(tmp, "config", "opencode")); err != nil {
		t.Errorf("opencode's config dir was not kept writable: %v", err)
	}
}
