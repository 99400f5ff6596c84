package geminiacp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avenor-go/avenor/sdk/acp/acptest"
	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/runtime"
)

var fakeAgent string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gemini-test-")
	if err != nil {
		panic(err)
	}
	if fakeAgent, err = acptest.FakeAgent(dir, "gemini"); err != nil {
		println(err.Error())
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			println("goleak:", err.Error())
			code = 1
		}
	}
	os.Exit(code)
}

type world struct {
	t   *testing.T
	dir string
	log string
	env map[string]string
}

func newWorld(t *testing.T) *world {
	tmp := t.TempDir()
	w := &world{t: t, dir: filepath.Join(tmp, "ws"), log: filepath.Join(tmp, "agent.log")}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The binary comes from the backend's env, as [backends.gemini-acp].env
	// would give it.
	w.env = map[string]string{BinaryEnv: fakeAgent, "FAKEACP_PROFILE": "gemini", "FAKEACP_STATE": filepath.Join(tmp, "state"), "FAKEACP_LOG": w.log}
	return w
}

func (w *world) open(req runtime.OpenRequest, h *acptest.Host) (runtime.Session, error) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := plugin.ServeInProcess(ctx, plugin.Info{Name: "gemini", Version: "test"}, nil, New())
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(c.Kill)
	b, _ := c.Backend(Name)
	req.Backend, req.Dir, req.Env = Name, w.dir, w.env
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

// Gemini asks before announcing the tool call: the plugin announces it, so
// the permission request always follows its tool.call.
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
			if res := prompt(t, s, "Create out.txt containing hello using the shell."); res.StopReason != runtime.StopEndTurn {
				t.Errorf("result %+v", res)
			}
			if _, err := os.Stat(filepath.Join(w.dir, "out.txt")); (err == nil) != tc.file {
				t.Errorf("out.txt exists: %v", err == nil)
			}
			if got := fmt.Sprint(h.Types()); !strings.HasPrefix(got, "[tool.call permission.request tool.call_update") {
				t.Errorf("events %s", got)
			}
			if calls := h.Of(runtime.EventToolCall); len(calls) != 1 || calls[0].Fields["synthetic"] != true {
				t.Errorf("tool.call %+v", calls)
			}
			reqs := h.Requests()
			if len(reqs) != 1 || reqs[0].Options[0].ID != "proceed_always" || reqs[0].Tool != "execute" {
				t.Errorf("requests %+v", reqs)
			}
		})
	}
}

func TestLaunchLineAndEnv(t *testing.T) {
	w := newWorld(t)
	s, err := w.open(runtime.OpenRequest{}, &acptest.Host{})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close(context.Background())
	log := acptest.ReadLog(t, w.log)
	argv, _ := json.Marshal(log[0]["argv"])
	if string(argv) != `["--acp","--approval-mode","default"]` || log[0]["cwd"] != w.dir {
		t.Errorf("argv %s cwd %v", argv, log[0]["cwd"])
	}
	if env, _ := log[0]["env"].(map[string]any); env["GEMINI_CLI_NO_RELAUNCH"] != "true" {
		t.Errorf("env %v", env)
	}
}

// --model goes through session/set_model (docs/backends.md#gemini-acp-plugin-gemini); a version without
// a model switch is told about with a warning, never silently.
func TestModel(t *testing.T) {
	w := newWorld(t)
	if _, err := w.open(runtime.OpenRequest{Model: "gemini-2.5-pro"}, &acptest.Host{}); err != nil {
		t.Fatal(err)
	}
	var set []string
	for _, m := range acptest.ReadLog(t, w.log) {
		if m["method"] == "session/set_model" {
			set = append(set, m["params"].(map[string]any)["modelId"].(string))
		}
	}
	if strings.Join(set, ",") != "gemini-2.5-pro" {
		t.Errorf("set_model %v", set)
	}

	w = newWorld(t)
	w.env["FAKEACP_NO_MODELS"] = "1"
	h := &acptest.Host{}
	s, err := w.open(runtime.OpenRequest{Model: "gemini-2.5-pro"}, h)
	if err != nil {
		t.Fatal(err)
	}
	prompt(t, s, "hi") // events held during Open come with the first turn
	warns := h.Of(runtime.EventWarning)
	if len(warns) != 1 || !strings.Contains(warns[0].Fields["message"].(string), `--model "gemini-2.5-pro" has no effect`) || warns[0].Fields["source"] != "backend" {
		t.Errorf("warnings %+v", warns)
	}
}

// Resume is session/load; Gemini replays after answering, and none of the
// replay reaches the events.
func TestResume(t *testing.T) {
	w := newWorld(t)
	s, err := w.open(runtime.OpenRequest{}, &acptest.Host{})
	if err != nil {
		t.Fatal(err)
	}
	prompt(t, s, "remember pelican")
	id := s.ID()
	_ = s.Close(context.Background())
	h := &acptest.Host{}
	s2, err := w.open(runtime.OpenRequest{ResumeSessionID: id}, h)
	if err != nil {
		t.Fatal(err)
	}
	prompt(t, s2, "RECALL")
	if got := h.FinalText(); got != "HISTORY: remember pelican" {
		t.Errorf("final text %q (events %v)", got, h.Types())
	}
	if n := len(h.Of(runtime.EventUserMessageChunk)); n != 0 {
		t.Errorf("%d replayed user chunks", n)
	}
	if !strings.Contains(strings.Join(acptest.Methods(acptest.ReadLog(t, w.log)), ","), "initialize,session/load,session/prompt") {
		t.Errorf("methods %v", acptest.Methods(acptest.ReadLog(t, w.log)))
	}
}

func TestCancel(t *testing.T) {
	w := newWorld(t)
	var s runtime.Session
	h := &acptest.Host{}
	done := false
	h.OnEvent = func(ev runtime.Event) {
		if ev.Type == runtime.EventMessageChunk && !done {
			done = true
			go s.Cancel(context.Background())
		}
	}
	var err error
	if s, err = w.open(runtime.OpenRequest{}, h); err != nil {
		t.Fatal(err)
	}
	if res := prompt(t, s, "SLOW please"); res.StopReason != runtime.StopCancelled {
		t.Errorf("result %+v", res)
	}
}

func TestInfo(t *testing.T) {
	info := New().Info()
	for cap, want := range map[runtime.Capability]runtime.Support{
		runtime.CapModelSelection: runtime.Experimental, runtime.CapResume: runtime.Experimental,
		runtime.CapPermissionRelay: runtime.Supported, runtime.CapExternalServerURL: runtime.Unsupported,
	} {
		if got := info.Capability(cap); got != want {
			t.Errorf("%s = %s; want %s", cap, got, want)
		}
	}
	r := New().Check(context.Background(), runtime.CheckRequest{Backend: Name, Env: map[string]string{BinaryEnv: fakeAgent}})
	if !r.Ready || !strings.Contains(r.Version, "fakeagent") {
		t.Errorf("check %+v", r)
	}
}

// The permission mode becomes --approval-mode, the MCP servers go to
// session/new, and a field Gemini cannot honour (an appended system
// prompt) is refused before the agent starts.
func TestPermissionModeAndLaunchContext(t *testing.T) {
	for mode, want := range map[runtime.PermissionMode]string{
		runtime.ModeDefault: "default", runtime.ModeAcceptEdits: "auto_edit", runtime.ModePlan: "plan", runtime.ModeFullAccess: "auto_edit",
	} {
		t.Run(string(mode), func(t *testing.T) {
			w := newWorld(t)
			servers := []runtime.MCPServer{{Name: "files", Type: runtime.MCPStdio, Command: "/bin/files", Env: []runtime.NameValue{{Name: "K", Value: "v"}}}}
			s, err := w.open(runtime.OpenRequest{PermissionMode: mode, Launch: runtime.LaunchContext{MCPServers: servers}}, &acptest.Host{})
			if err != nil {
				t.Fatal(err)
			}
			_ = s.Close(context.Background())
			log := acptest.ReadLog(t, w.log)
			argv, _ := json.Marshal(log[0]["argv"])
			if string(argv) != `["--acp","--approval-mode","`+want+`"]` {
				t.Errorf("argv %s; want --approval-mode %s", argv, want)
			}
			var sent string
			for _, m := range log[1:] {
				if m["method"] == "session/new" {
					b, _ := json.Marshal(m["params"].(map[string]any)["mcpServers"])
					sent = string(b)
				}
			}
			if sent != `[{"args":[],"command":"/bin/files","env":[{"name":"K","value":"v"}],"name":"files"}]` {
				t.Errorf("session/new mcpServers = %s", sent)
			}
		})
	}
	w := newWorld(t)
	_, err := w.open(runtime.OpenRequest{Launch: runtime.LaunchContext{AppendSystemPrompt: "x"}}, &acptest.Host{})
	if err == nil || !strings.Contains(err.Error(), `backend "gemini-acp" does not support --append-system-prompt`) {
		t.Fatalf("Open = %v; want the appended system prompt refused", err)
	}
	if _, statErr := os.Stat(w.log); statErr == nil {
		t.Errorf("the agent started for a refused launch context")
	}
}
