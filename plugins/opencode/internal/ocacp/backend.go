// Package ocacp is the opencode-acp backend: `opencode acp` driven over ACP
// (docs/backends.md#opencode-acp-plugin-opencode, runtime-protocols.md §2.5).
package ocacp

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/avenor-go/avenor/plugins/opencode/internal/occonfig"
	"github.com/avenor-go/avenor/plugins/opencode/internal/ocwarm"
	"github.com/avenor-go/avenor/sdk/acp"
	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/procsession"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Name is the backend's name.
const Name = "opencode-acp"

// Environment the backend reads.
const (
	// BinaryEnv overrides the opencode binary (the "binary" option wins).
	BinaryEnv = "AVENOR_OPENCODE_BIN"
	// ServerURLEnv is opencode-http's default server; it makes this
	// backend refuse to run (docs/configuration.md#other-environment-variables).
	ServerURLEnv = "AVENOR_OPENCODE_URL"
)

const installHint = "install it with: npm install -g opencode-ai (or set the backend option binary, or " + BinaryEnv + ", to its path)"

// New returns the opencode-acp backend.
func New() runtime.Backend {
	return acp.NewBackend(acp.BackendSpec{
		Info: runtime.BackendInfo{
			Name:        Name,
			Description: "OpenCode over ACP: `opencode acp`, one process per session",
			Capabilities: procsession.Capabilities(
				runtime.CapResume, runtime.CapPermissionRelay, runtime.CapModelSelection, runtime.CapPrewarm,
				runtime.ModeCapability(runtime.ModeDefault), runtime.ModeCapability(runtime.ModeAcceptEdits),
				runtime.ModeCapability(runtime.ModePlan), runtime.ModeCapability(runtime.ModeFullAccess),
				runtime.CapMCPServers, runtime.CapSandbox, runtime.CapSandboxNetworkModel,
			),
			ResumeScope: runtime.ResumeCrossProcess,
			EventTypes:  acp.EventTypes,
		},
		Binary:      "opencode",
		BinaryEnv:   BinaryEnv,
		InstallHint: installHint,
		Configure:   configure,
		Opened:      warmUp,
		RuntimeDirs: runtimeDirs,
	})
}

// runtimeDirs are what opencode writes besides the workspace: its data
// (sessions, the database), state, cache and config directories under
// the XDG base directories, which a workspace sandbox keeps writable.
func runtimeDirs(env []string) []string {
	return agentproc.XDGDirs(env, "opencode")
}

// warmUp has the fresh opencode build what its first prompt needs for the
// session's directory while nothing waits for it (ocwarm).
func warmUp(s *acp.Session, req runtime.OpenRequest) func() {
	dir, err := filepath.Abs(req.Dir)
	if err != nil {
		return nil
	}
	return ocwarm.Start(s.Process().PID, dir, agentproc.Environ(req.Env, nil), s.Logger().Named("warm"))
}

// configure sets the command line, refuses a server URL, and resolves
// --agent's model and mode from OpenCode's own config.
func configure(req runtime.OpenRequest, cfg *acp.Config) (func(), error) {
	getenv := func(k string) string { return agentproc.Lookup(cfg.Env, k) }
	if req.ServerURL != "" || getenv(ServerURLEnv) != "" {
		return nil, runtime.Errorf(runtime.FaultUser,
			"%s runs its own `opencode acp` and does not use a server URL, but --server-url or %s is set; use --backend opencode-http to drive an OpenCode server, or unset it",
			Name, ServerURLEnv)
	}
	dir, err := filepath.Abs(req.Dir)
	if err != nil {
		return nil, runtime.Errorf(runtime.FaultUser, "%s: --dir %q: %v", Name, req.Dir, err)
	}
	cfg.Dir = dir
	cfg.Args = []string{"acp", "--pure", "--log-level", "WARN", "--cwd", dir}
	cfg.AuthHint = "log in with `opencode auth login`, or configure a provider in opencode.json"
	if req.PermissionMode != "" {
		// The mode's permission.edit and permission.bash, in the inline
		// config that wins over every file; a subagent's per-run config
		// below starts from it.
		content, err := occonfig.WithPermissionMode(getenv("OPENCODE_CONFIG_CONTENT"), req.PermissionMode, req.Agent)
		if err != nil {
			return nil, runtime.Errorf(runtime.FaultUser, "%s: %v", Name, err)
		}
		cfg.Env = setEnv(cfg.Env, "OPENCODE_CONFIG_CONTENT", content)
	}
	if err := modelEndpoints(dir, getenv, cfg); err != nil {
		return nil, err
	}
	if req.Agent == "" {
		return nil, nil
	}
	layers, err := occonfig.Layers(dir, getenv)
	if err != nil {
		return nil, runtime.Errorf(runtime.FaultUser, "%s: %v", Name, err)
	}
	agent := occonfig.ResolveAgent(layers, req.Agent, getenv)
	if cfg.Model == "" && agent.Model != "" {
		cfg.Model = agent.Model
	}
	if agent.Mode != "subagent" {
		return nil, nil
	}
	// A subagent is not selectable as the session's agent: a per-run config
	// makes it "all" (docs/backends.md#opencode-acp-plugin-opencode).
	rc, err := occonfig.WriteRunConfig(req.RunID, req.Agent, getenv)
	if err != nil {
		return nil, runtime.Errorf(runtime.FaultUser, "%s: %v", Name, err)
	}
	cfg.Env = setEnv(cfg.Env, "OPENCODE_CONFIG", rc.Path)
	cfg.Env = setEnv(cfg.Env, "OPENCODE_CONFIG_CONTENT", rc.Content)
	// The config lies in the host's temp dir, which a sandbox's private
	// /tmp hides: opencode reads it through a read-only bind.
	if cfg.Sandbox.Active() {
		cfg.Sandbox.RuntimeFiles = append(cfg.Sandbox.RuntimeFiles, rc.Path)
	}
	return func() { _ = os.Remove(rc.Path) }, nil
}

func setEnv(env []string, key, value string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// modelEndpoints fills, under --sandbox-network model, the sandbox's
// model endpoints from OpenCode's configuration (occonfig.ModelEndpoints):
// the forwarder listens at the loopback ones and the host allows them
// all. A model whose provider names no baseURL is refused here, before
// anything starts.
func modelEndpoints(dir string, getenv occonfig.Env, cfg *acp.Config) error {
	if cfg.Sandbox.Network != runtime.SandboxNetworkModel {
		return nil
	}
	layers, err := occonfig.Layers(dir, getenv)
	if err != nil {
		return runtime.Errorf(runtime.FaultUser, "%s: %v", Name, err)
	}
	eps, err := occonfig.ModelEndpoints(layers, cfg.Model)
	if err != nil {
		return runtime.Errorf(runtime.FaultUser, "%s: --sandbox-network model: %v", Name, err)
	}
	if len(eps) == 0 {
		return runtime.Errorf(runtime.FaultUser, "%s: --sandbox-network model: the model's provider names no options.baseURL in OpenCode's config, so its endpoint is not known; set it, or name the endpoint with --sandbox-network allow=host:port", Name)
	}
	cfg.Sandbox.ModelEndpoints = eps
	return nil
}
