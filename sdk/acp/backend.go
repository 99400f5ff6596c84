package acp

import (
	"context"
	"github.com/avenor-go/avenor/sdk/agentproc"
	"os/exec"
	"strings"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// BackendSpec describes an ACP backend for NewBackend. Info, Binary and
// InstallHint are required.
type BackendSpec struct {
	// Info is what Describe reports; EventTypes defaults to EventTypes.
	Info runtime.BackendInfo
	// Binary is the runtime CLI's default name, looked up in PATH.
	Binary string
	// AltBinaries are other names of the CLI, tried in PATH when Binary is
	// not found there and was not overridden (Cursor's agent is also
	// cursor-agent).
	AltBinaries []string
	// BinaryEnv names an environment variable that overrides Binary (the
	// "binary" backend option wins over it), e.g. AVENOR_OPENCODE_BIN.
	BinaryEnv string
	// InstallHint says how to install the CLI.
	InstallHint string
	// EnvDefaults are set in the runtime's environment unless already set
	// (e.g. GEMINI_CLI_NO_RELAUNCH=true).
	EnvDefaults map[string]string
	// Configure fills in the per-backend parts of cfg (Args, model policy,
	// extensions…) from the request, after the common parts are set. It
	// may return a cleanup run when the session closes (or Open fails).
	Configure func(req runtime.OpenRequest, cfg *Config) (cleanup func(), err error)
	// RuntimeDirs, for a backend that declares runtime.CapSandbox, are the
	// agent's own state and config directories under its environment env,
	// kept writable in a workspace sandbox. Nil: none.
	RuntimeDirs func(env []string) []string
	// Opened, when set, runs once the session is open (before Open
	// returns), e.g. to start warming the agent up for its first prompt.
	// It must not block; the cleanup it returns runs once the agent is
	// stopped and must wait for whatever Opened started.
	Opened func(s *Session, req runtime.OpenRequest) (cleanup func())
}

// NewBackend is a runtime.Backend that runs an ACP agent per session.
func NewBackend(spec BackendSpec) runtime.Backend {
	if len(spec.Info.EventTypes) == 0 {
		spec.Info.EventTypes = EventTypes
	}
	return &backend{spec: spec}
}

type backend struct{ spec BackendSpec }

func (b *backend) Info() runtime.BackendInfo { return b.spec.Info }

func (b *backend) binary(options map[string]any, env map[string]string) string {
	bin := agentproc.ResolveBinary(b.spec.Binary, b.spec.BinaryEnv, options, env)
	if bin != b.spec.Binary {
		return bin
	}
	if _, err := exec.LookPath(bin); err != nil {
		for _, alt := range b.spec.AltBinaries {
			if _, err := exec.LookPath(alt); err == nil {
				return alt
			}
		}
	}
	return bin
}

func (b *backend) Check(ctx context.Context, req runtime.CheckRequest) runtime.Readiness {
	return agentproc.Check(ctx, b.spec.Info.Name, b.binary(req.Options, req.Env), agentproc.Environ(req.Env, b.spec.EnvDefaults), b.spec.InstallHint)
}

func (b *backend) Open(ctx context.Context, req runtime.OpenRequest, host runtime.Host) (runtime.Session, error) {
	if strings.TrimSpace(req.Dir) == "" {
		return nil, runtime.Errorf(runtime.FaultUser, "%s: no working directory given", b.spec.Info.Name)
	}
	// What the backend does not declare is refused, never ignored: a
	// Configure maps the modes and fields it declares.
	if err := runtime.CheckLaunch(b.spec.Info, req.PermissionMode, req.Launch); err != nil {
		return nil, runtime.Errorf(runtime.FaultUser, "%v", err).WithCode(runtime.CodeUnsupported)
	}
	if err := runtime.CheckSandbox(b.spec.Info, req.Sandbox); err != nil {
		return nil, runtime.Errorf(runtime.FaultUser, "%v", err).WithCode(runtime.CodeUnsupported)
	}
	cfg := Config{
		Backend: b.spec.Info.Name, Binary: b.binary(req.Options, req.Env), Dir: req.Dir,
		Env: agentproc.Environ(req.Env, b.spec.EnvDefaults), InstallHint: b.spec.InstallHint,
		ResumeSessionID: req.ResumeSessionID, Model: req.Model, Mode: req.Agent,
		MCPServers: req.Launch.MCPServers, Sandbox: req.Sandbox,
	}
	var cleanup func()
	if b.spec.Configure != nil {
		var err error
		if cleanup, err = b.spec.Configure(req, &cfg); err != nil {
			if cleanup != nil {
				cleanup()
			}
			return nil, err
		}
	}
	if cfg.Sandbox.Active() && b.spec.RuntimeDirs != nil {
		cfg.Sandbox = cfg.Sandbox.WithRuntimeDirs(b.spec.RuntimeDirs(cfg.Env)...)
	}
	s, err := Open(ctx, cfg, host)
	if err != nil {
		if cleanup != nil {
			cleanup()
		}
		return nil, err
	}
	if cleanup != nil {
		s.onClose = append(s.onClose, cleanup)
	}
	if b.spec.Opened != nil {
		if done := b.spec.Opened(s, req); done != nil {
			s.onClose = append(s.onClose, done)
		}
	}
	return s, nil
}
