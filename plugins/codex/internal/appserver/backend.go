package appserver

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/procsession"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Name is the backend's name.
const Name = "codex-app-server"

// BinaryEnv overrides the codex binary (the "binary" backend option wins).
const BinaryEnv = "AVENOR_CODEX_BIN"

// TestedVersion is the Codex CLI version the plugin was verified against
// (real-runtimes.md); others run, with the version in every session.end so
// protocol drift shows.
const TestedVersion = "0.171.0"

// SandboxOption is the backend option ([backends.codex-app-server].options)
// that sets thread/start's sandbox: read-only, workspace-write or
// danger-full-access. Unset, Codex's own configuration (sandbox_mode in
// $CODEX_HOME/config.toml) decides.
const SandboxOption = "sandbox"

// NestedSandbox is thread/start's sandbox when avenor launches Codex inside
// its own boundary and neither the sandbox option nor a mode set one.
const NestedSandbox = "danger-full-access"

const installHint = "install it with: npm install -g @openai/codex@" + TestedVersion + " (or set the backend option binary, or " + BinaryEnv + ", to its path)"

// thinkingLevels are the --thinking values codex-app-server accepts
// (docs/backends.md#capability-matrix); each goes to turn/start's effort every turn.
var thinkingLevels = []string{"low", "medium", "high", "xhigh", "max"}

// effort is Codex's reasoning effort for a --thinking level. Codex's
// highest effort is xhigh, so max asks for that.
func effort(level string) string {
	if level == "max" {
		return "xhigh"
	}
	return level
}

// EventTypes is every event type a codex session emits.
var EventTypes = []runtime.EventType{
	runtime.EventMessageChunk, runtime.EventThoughtChunk,
	runtime.EventToolCall, runtime.EventToolCallUpdate, runtime.EventPlan,
	runtime.EventNative, runtime.EventWarning, EventError,
	EventItemStarted, EventItemCompleted, runtime.EventUsageAccount,
}

// Event types of this backend beyond the canonical ones. The avenor.item.*
// compatibility events (docs/events.md#backend-events) carry Codex's item/started and
// item/completed notifications as they came: item (the ThreadItem),
// item_type, threadId, turnId.
const (
	EventItemStarted   runtime.EventType = "avenor.item.started"
	EventItemCompleted runtime.EventType = "avenor.item.completed"
	EventError                           = runtime.EventError
)

func New() runtime.Backend { return backend{} }

type backend struct{}

// Info is honest about Codex (docs/backends.md#capability-matrix): threads persist in
// CODEX_HOME, so a fresh process resumes them; --model goes to
// thread/start; permission requests are Codex's own approval requests.
func (backend) Info() runtime.BackendInfo {
	return runtime.BackendInfo{
		Name:        Name,
		Description: "Codex CLI over its app-server protocol: `codex app-server`, one process per session",
		// plan is Codex's read-only sandbox. accept-edits is the approval
		// policy "untrusted" as always: Codex asks before each command
		// (e2e TestSandboxDeniedCodex/accept-edits: every exec_command
		// asked), and the host's broker allows the file changes by mode.
		// default and full-access are not declared: whether the approval
		// policy asks before every file change is not verified against the
		// real CLI, so they are refused rather than run broader than asked.
		Capabilities: procsession.Capabilities(
			runtime.CapResume, runtime.CapPermissionRelay, runtime.CapModelSelection, runtime.CapPrewarm, runtime.CapQuestions, runtime.CapImages,
			runtime.ModeCapability(runtime.ModePlan), runtime.ModeCapability(runtime.ModeAcceptEdits), runtime.CapSandbox, runtime.CapSandboxNetworkModel, runtime.CapModelListing,
			runtime.CapUsageReporting, runtime.CapCompaction,
		).With(runtime.CapRateLimitReset, rateLimitSupport),
		ResumeScope:    runtime.ResumeCrossProcess,
		ThinkingLevels: thinkingLevels,
		EventTypes:     EventTypes,
	}
}

func binary(options map[string]any, env map[string]string) string {
	return agentproc.ResolveBinary("codex", BinaryEnv, options, env)
}

// Check runs `codex --version`; authentication is checked when a thread
// starts.
func (backend) Check(ctx context.Context, req runtime.CheckRequest) runtime.Readiness {
	return agentproc.Check(ctx, Name, binary(req.Options, req.Env), agentproc.Environ(req.Env, nil), installHint)
}

// Open starts `codex app-server` and starts or resumes a thread.
func (backend) Open(ctx context.Context, req runtime.OpenRequest, host runtime.Host) (runtime.Session, error) {
	cfg, err := configFor(req)
	if err != nil {
		return nil, err
	}
	return open(ctx, cfg, host)
}

// configFor validates the request and turns it into a session Config.
func configFor(req runtime.OpenRequest) (Config, error) {
	if strings.TrimSpace(req.Dir) == "" {
		return Config{}, runtime.Errorf(runtime.FaultUser, "%s: no working directory given", Name)
	}
	if req.ServerURL != "" {
		return Config{}, runtime.Errorf(runtime.FaultUser, "%s does not use a server URL (--server-url); the model endpoint is Codex's model_providers configuration in $CODEX_HOME/config.toml", Name)
	}
	if req.Agent != "" {
		return Config{}, runtime.Errorf(runtime.FaultUser, "%s does not support parameter \"agent\" (--agent %q): Codex has no agents to choose", Name, req.Agent)
	}
	cfg := Config{
		Binary: binary(req.Options, req.Env), Dir: req.Dir, Env: agentproc.Environ(req.Env, nil),
		Model: req.Model, ResumeThreadID: req.ResumeSessionID, Questions: req.Questions,
	}
	if req.Thinking != "" {
		ok := false
		for _, l := range thinkingLevels {
			ok = ok || l == req.Thinking
		}
		if !ok {
			return Config{}, runtime.Errorf(runtime.FaultUser, "%s: --thinking %q is not supported; accepted: %s", Name, req.Thinking, strings.Join(thinkingLevels, ", "))
		}
		cfg.Effort = effort(req.Thinking)
	}
	if v, ok := req.Options[SandboxOption]; ok {
		s, _ := v.(string)
		switch s {
		case "read-only", "workspace-write", "danger-full-access":
			cfg.Sandbox = s
		default:
			return Config{}, runtime.Errorf(runtime.FaultUser, "%s: option %s = %v: want read-only, workspace-write or danger-full-access", Name, SandboxOption, fmt.Sprint(v))
		}
	}
	switch req.PermissionMode {
	case "":
	case runtime.ModeAcceptEdits:
		// Nothing native: Codex relays its approvals and the broker
		// decides them by the mode (edits allowed, commands asked).
	case runtime.ModePlan:
		// Codex's read-only sandbox, whatever the sandbox option says: a
		// mode only ever narrows.
		cfg.Sandbox = "read-only"
	default:
		return Config{}, runtime.Errorf(runtime.FaultUser, "%s does not support permission mode %q; supported modes: accept-edits, plan", Name, req.PermissionMode).WithCode(runtime.CodeUnsupported)
	}
	if err := runtime.CheckLaunch(backend{}.Info(), req.PermissionMode, req.Launch); err != nil {
		return Config{}, runtime.Errorf(runtime.FaultUser, "%v", err).WithCode(runtime.CodeUnsupported)
	}
	if err := runtime.CheckSandbox(backend{}.Info(), req.Sandbox); err != nil {
		return Config{}, runtime.Errorf(runtime.FaultUser, "%v", err).WithCode(runtime.CodeUnsupported)
	}
	cfg.Boundary = req.Sandbox.WithRuntimeDirs(runtimeDirs(cfg.Env)...)
	if cfg.Boundary.Network == runtime.SandboxNetworkModel {
		eps, err := modelEndpoints(cfg.Env)
		if err != nil {
			return Config{}, runtime.Errorf(runtime.FaultUser, "%s: --sandbox-network model: %v", Name, err)
		}
		if len(eps) == 0 {
			return Config{}, runtime.Errorf(runtime.FaultUser, "%s: --sandbox-network model: Codex's config.toml names no base_url for the model provider in use (nor OPENAI_BASE_URL for openai), so its endpoint is not known; set it, or name the endpoint with --sandbox-network allow=host:port", Name)
		}
		cfg.Boundary.ModelEndpoints = eps
	}
	if req.Sandbox.Active() && cfg.Sandbox == "" {
		// Nested sandboxes (docs/sandbox.md#nested-sandboxes): avenor's
		// boundary is the outer one, and Codex's own Linux sandbox (its
		// bwrap re-running codex as codex-linux-sandbox) cannot start
		// inside it — codex 0.171 fails the command with "bwrap: execvp
		// codex-linux-sandbox: No such file or directory". Codex's is
		// off; nothing is broader than avenor's boundary. An explicit
		// sandbox option or --permission-mode plan keeps Codex's own: a
		// setting only narrows.
		cfg.Sandbox = NestedSandbox
	}
	return cfg, nil
}

// runtimeDirs are what Codex writes besides the workspace: $CODEX_HOME
// (threads, config, logs; ~/.codex by default), which a workspace sandbox
// keeps writable.
func runtimeDirs(env []string) []string {
	if h := agentproc.Lookup(env, "CODEX_HOME"); filepath.IsAbs(h) {
		return []string{h}
	}
	if home := agentproc.Lookup(env, "HOME"); filepath.IsAbs(home) {
		return []string{filepath.Join(home, ".codex")}
	}
	return nil
}
