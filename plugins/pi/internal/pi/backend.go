package pi

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/procsession"
	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/safefile"
)

// Name is the backend's name.
const Name = "pi"

// BinaryEnv overrides the pi binary (the "binary" backend option wins).
const BinaryEnv = "AVENOR_PI_BIN"

// Backend options ([backends.pi].options).
const (
	// OptionPermissionGate: false turns the shipped gate extension off.
	OptionPermissionGate = "permission_gate"
	// OptionAgentProfile is passed to pi as PI_AGENT_PROFILE.
	OptionAgentProfile = "agent_profile"
)

const installHint = "install it with: npm install -g @mariozechner/pi-coding-agent@0.73.1 (or set the backend option binary, or " + BinaryEnv + ", to its path)"

// minVersion is the oldest pi whose RPC mode (extension_ui_request dialogs,
// get_state.sessionId, --session-dir lookup) this plugin was checked against.
var minVersion = [3]int{0, 73, 0}

//go:embed avenor-gate.ts
var gateSource []byte

// gateTitlePrefix starts the title of every dialog the gate opens.
const gateTitlePrefix = "avenor-gate: "

// thinkingLevels are the --thinking values accepted (docs/backends.md#capability-matrix); pi's
// own top level is xhigh, so max is sent as xhigh.
var thinkingLevels = []string{"off", "low", "medium", "high", "xhigh", "max"}

// eventTypes is every event type a pi session emits.
var eventTypes = []runtime.EventType{
	runtime.EventMessageChunk, runtime.EventThoughtChunk,
	runtime.EventToolCall, runtime.EventToolCallUpdate,
	runtime.EventNative, runtime.EventWarning,
	"avenor.message.start", "avenor.message.update", "avenor.message.end",
	"avenor.tool.start", "avenor.tool.update", "avenor.tool.end",
}

type backend struct{}

func New() runtime.Backend { return backend{} }

// Info is honest about pi (docs/backends.md#capability-matrix): resume is cross_process because
// the plugin keeps pi's session files under its state directory; permission
// relay goes through the shipped gate extension (off with
// permission_gate = false, and then nothing is asked).
func (backend) Info() runtime.BackendInfo {
	return runtime.BackendInfo{
		Name:        Name,
		Description: "pi coding agent over RPC: `pi --mode rpc`, one process per session, permissions through avenor's gate extension",
		// The modes are the gate's: it asks before every shell command
		// and file write, and the host's broker decides by the mode
		// (refused with permission_gate = false). The tool list is
		// --tools (--no-tools for none), the appended prompt
		// --append-system-prompt with a file.
		Capabilities: procsession.Capabilities(
			runtime.CapResume, runtime.CapPermissionRelay, runtime.CapModelSelection, runtime.CapPrewarm,
			runtime.ModeCapability(runtime.ModeDefault), runtime.ModeCapability(runtime.ModeAcceptEdits),
			runtime.ModeCapability(runtime.ModePlan), runtime.ModeCapability(runtime.ModeFullAccess),
			runtime.CapAppendSystemPrompt, runtime.CapAllowedTools, runtime.CapModelListing,
			runtime.CapUsageReporting,
		),
		ResumeScope:    runtime.ResumeCrossProcess,
		ThinkingLevels: thinkingLevels,
		EventTypes:     eventTypes,
	}
}

func (backend) Check(ctx context.Context, req runtime.CheckRequest) runtime.Readiness {
	bin := agentproc.ResolveBinary("pi", BinaryEnv, req.Options, req.Env)
	r := agentproc.Check(ctx, Name, bin, agentproc.Environ(req.Env, nil), installHint)
	if r.Ready {
		if err := checkVersion(r.Version); err != nil {
			r.Ready, r.Message = false, err.Error()
		}
	}
	return r
}

// checkVersion refuses a pi older than minVersion or one whose version
// cannot be read.
func checkVersion(v string) error {
	got, ok := parseVersion(v)
	if !ok {
		return runtime.Errorf(runtime.FaultRuntime, "%s: cannot read the pi version from `pi --version` (%q); %s", Name, v, installHint)
	}
	for i := range got {
		if got[i] != minVersion[i] {
			if got[i] < minVersion[i] {
				return runtime.Errorf(runtime.FaultRuntime, "%s: pi %s is too old (need %d.%d.%d or newer for its RPC mode); %s",
					Name, v, minVersion[0], minVersion[1], minVersion[2], installHint)
			}
			break
		}
	}
	return nil
}

func parseVersion(s string) ([3]int, bool) {
	var v [3]int
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexAny(s, "-+ "); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

// launch is everything Open worked out before starting pi.
type launch struct {
	binary  string
	args    []string
	env     []string
	dir     string
	gate    bool
	thinkTo string // the level sent to pi
	// cleanup removes the launch context's files; nil when there are none.
	cleanup func()
}

// plan builds pi's command line and environment for req.
func plan(req runtime.OpenRequest) (launch, error) {
	l := launch{dir: req.Dir, gate: true}
	if req.ServerURL != "" {
		return l, runtime.Errorf(runtime.FaultUser, "%s does not use a server URL (--server-url); configure pi's providers in models.json in PI_CODING_AGENT_DIR", Name)
	}
	if v, ok := req.Options[OptionPermissionGate]; ok {
		b, isBool := v.(bool)
		if !isBool {
			return l, runtime.Errorf(runtime.FaultUser, "[backends.%s] options.%s must be true or false, not %v", Name, OptionPermissionGate, v)
		}
		l.gate = b
	}
	l.binary = agentproc.ResolveBinary("pi", BinaryEnv, req.Options, req.Env)

	env := map[string]string{}
	for k, v := range req.Env {
		env[k] = v
	}
	model, provider := req.Model, ""
	if req.Agent != "" {
		a, err := resolveAgent(req.Agent, agentDir(req.Env))
		if err != nil {
			return l, err
		}
		if model == "" {
			model, provider = a.Model, a.Provider
		}
		env["PI_AGENT"] = req.Agent
	}
	if p, _ := req.Options[OptionAgentProfile].(string); p != "" {
		env["PI_AGENT_PROFILE"] = p
	}
	l.env = environ(env, req.Agent != "", env["PI_AGENT_PROFILE"] != "")

	args := []string{"--mode", "rpc"}
	if req.StateDir != "" {
		args = append(args, "--session-dir", sessionDir(req.StateDir))
	} else {
		args = append(args, "--no-session")
	}
	if provider == "" {
		provider, _ = req.Options["provider"].(string)
	}
	if provider != "" {
		args = append(args, "--provider", provider)
	}
	if model != "" {
		args = append(args, "--model", model)
	}
	if req.Thinking != "" {
		if !contains(thinkingLevels, req.Thinking) {
			return l, runtime.Errorf(runtime.FaultUser, "backend %q does not accept --thinking %q (accepted: %s)", Name, req.Thinking, strings.Join(thinkingLevels, " "))
		}
		l.thinkTo = req.Thinking
		if l.thinkTo == "max" {
			l.thinkTo = "xhigh"
		}
		args = append(args, "--thinking", l.thinkTo)
	}
	if req.PermissionMode != "" && !l.gate {
		return l, runtime.Errorf(runtime.FaultUser, "%s honours --permission-mode only through avenor's gate extension, which [backends.%s] options.%s = false turns off", Name, Name, OptionPermissionGate).WithCode(runtime.CodeUnsupported)
	}
	if tools := req.Launch.AllowedTools; tools != nil {
		if len(tools) == 0 {
			args = append(args, "--no-tools")
		} else {
			args = append(args, "--tools", strings.Join(tools, ","))
		}
	}
	if p := req.Launch.AppendSystemPrompt; p != "" {
		// pi reads a file's contents when the argument names one: the
		// text stays out of argv.
		dir, err := os.MkdirTemp("", "avenor-pi-launch-*")
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "append-system-prompt.md"), []byte(p), 0o600)
			if err != nil {
				_ = os.RemoveAll(dir)
			}
		}
		if err != nil {
			return l, runtime.Errorf(runtime.FaultPlugin, "%s: writing the appended system prompt: %v", Name, err)
		}
		l.cleanup = func() { _ = os.RemoveAll(dir) }
		args = append(args, "--append-system-prompt", filepath.Join(dir, "append-system-prompt.md"))
	}
	if l.gate {
		path, err := writeGate(req.StateDir)
		if err != nil {
			return l, runtime.Errorf(runtime.FaultPlugin, "%s: writing the permission gate extension: %v", Name, err)
		}
		args = append(args, "-e", path)
	}
	l.args = args
	return l, nil
}

// environ is the plugin's environment with PI_AGENT and PI_AGENT_PROFILE
// stripped (docs/backends.md#pi-plugin-pi: existing values never leak into a session that
// did not ask for them), then extra on top.
func environ(extra map[string]string, keepAgent, keepProfile bool) []string {
	var out []string
	for _, kv := range agentproc.Environ(extra, nil) {
		k, _, _ := strings.Cut(kv, "=")
		if (k == "PI_AGENT" && !keepAgent) || (k == "PI_AGENT_PROFILE" && !keepProfile) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// sessionDir is where pi keeps this plugin's sessions: under the state directory the host gives
// it (OpenRequest.StateDir), so a fresh process can resume them.
func sessionDir(stateDir string) string { return filepath.Join(stateDir, "sessions") }

// findSession returns the session file of id under dir. pi names them
// <timestamp>_<uuid>.jsonl, possibly in a per-cwd subdirectory.
func findSession(dir, id string) (string, error) {
	if id == "" || strings.ContainsAny(id, `/\`) {
		return "", runtime.Errorf(runtime.FaultUser, "%s: %q is not a pi session id", Name, id)
	}
	var found string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return err
			}
			return nil
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), "_"+id+".jsonl") {
			found = path
			return fs.SkipAll
		}
		return nil
	})
	if found != "" {
		return found, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", runtime.Errorf(runtime.FaultPlugin, "%s: reading the session directory %s: %v", Name, dir, err)
	}
	return "", runtime.Errorf(runtime.FaultUser, "%s: %v: no pi session %q in %s (only sessions started by this plugin can be resumed)", Name, runtime.ErrSessionNotFound, id, dir)
}

// writeGate writes the embedded gate extension where pi can load it: in the
// state directory, named by its hash so that concurrent sessions and plugin
// versions never overwrite one another's file while pi reads it.
func writeGate(stateDir string) (string, error) {
	dir := stateDir
	if dir == "" {
		// A predictable name in a shared directory: pi runs the gate it
		// finds there, so a directory another user made first would run
		// their code as us. PrivateDir refuses one that is not ours.
		dir = filepath.Join(os.TempDir(), "avenor-plugin-pi")
		if err := safefile.PrivateDir(dir); err != nil {
			return "", err
		}
	}
	dir = filepath.Join(dir, "extensions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	sum := sha256.Sum256(gateSource)
	path := filepath.Join(dir, "avenor-gate-"+hex.EncodeToString(sum[:6])+".ts")
	if b, err := os.ReadFile(path); err == nil && string(b) == string(gateSource) {
		return path, nil
	}
	tmp, err := os.CreateTemp(dir, ".avenor-gate-*.ts")
	if err != nil {
		return "", err
	}
	if _, err := tmp.Write(gateSource); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}

// agentEntry is one agent of pi's agents.json.
type agentEntry struct {
	Model    string `json:"model"`
	Provider string `json:"provider"`
}

// agentDir is pi's configuration directory: PI_CODING_AGENT_DIR (the
// session's env first) or ~/.pi/agent.
func agentDir(env map[string]string) string {
	if d := env["PI_CODING_AGENT_DIR"]; d != "" {
		return d
	}
	if d := os.Getenv("PI_CODING_AGENT_DIR"); d != "" {
		return d
	}
	home := env["HOME"]
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".pi", "agent")
}

// resolveAgent reads agent name from dir/agents.json, which is either
// {"<name>": {...}} or {"agents": {"<name>": {...}}}.
func resolveAgent(name, dir string) (agentEntry, error) {
	path := filepath.Join(dir, "agents.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return agentEntry{}, runtime.Errorf(runtime.FaultUser, "%s: --agent %q: cannot read %s: %v (pi's agents live in agents.json in PI_CODING_AGENT_DIR or ~/.pi/agent)", Name, name, path, err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return agentEntry{}, runtime.Errorf(runtime.FaultUser, "%s: %s is not valid JSON: %v", Name, path, err)
	}
	if inner, ok := doc["agents"]; ok {
		var m map[string]json.RawMessage
		if json.Unmarshal(inner, &m) == nil {
			doc = m
		}
	}
	raw, ok := doc[name]
	if !ok {
		return agentEntry{}, runtime.Errorf(runtime.FaultUser, "%s: --agent %q is not defined in %s", Name, name, path)
	}
	var a agentEntry
	if err := json.Unmarshal(raw, &a); err != nil {
		return agentEntry{}, runtime.Errorf(runtime.FaultUser, "%s: agent %q in %s: %v", Name, name, path, err)
	}
	return a, nil
}

// versionOf runs `pi --version` and checks it.
func versionOf(ctx context.Context, l launch) (string, error) {
	r := agentproc.Check(ctx, Name, l.binary, l.env, installHint)
	if !r.Ready {
		return "", runtime.Errorf(runtime.FaultRuntime, "%s", r.Message)
	}
	if err := checkVersion(r.Version); err != nil {
		return "", err
	}
	return r.Version, nil
}
