package cursoracp

import (
	"github.com/avenor-go/avenor/sdk/acp"
	"github.com/avenor-go/avenor/sdk/procsession"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Name is the backend's name.
const Name = "cursor-acp"

// BinaryEnv overrides the agent binary (the "binary" backend option wins).
const BinaryEnv = "AVENOR_CURSOR_BIN"

// authMethod is the method Cursor advertises; it answers {} when the CLI
// is already logged in.
const authMethod = "cursor_login"

const installHint = "install Cursor's CLI with: curl https://cursor.com/install -fsS | bash (it is not on npm), then log in with `agent login`; or set the backend option binary, or " + BinaryEnv + ", to its path"

// New is cursor-acp. Honest capabilities (docs/backends.md#capability-matrix, decision
// 13): --model uses the "model" config option of the builds that offer one
// (experimental: some models are account-gated and only fail when used);
// resume is session/load, tested only against a fake agent (unverified).
func New() runtime.Backend {
	return acp.NewBackend(acp.BackendSpec{
		Info: runtime.BackendInfo{
			Name:        Name,
			Description: "Cursor's agent CLI over ACP: `agent acp`, one process per session",
			Capabilities: procsession.Capabilities(runtime.CapPermissionRelay).
				With(runtime.CapResume, runtime.Unverified).
				With(runtime.CapModelSelection, runtime.Experimental),
			ResumeScope: runtime.ResumeCrossProcess,
			EventTypes:  acp.EventTypes,
		},
		Binary:      "agent",
		AltBinaries: []string{"cursor-agent"},
		BinaryEnv:   BinaryEnv,
		InstallHint: installHint,
		Configure:   configure,
	})
}

func configure(req runtime.OpenRequest, cfg *acp.Config) (func(), error) {
	if req.ServerURL != "" {
		return nil, runtime.Errorf(runtime.FaultUser, "%s does not use a server URL (--server-url); Cursor's endpoint is a global flag of its CLI", Name)
	}
	cfg.Args = []string{"acp"}
	cfg.AuthMethod = authMethod
	cfg.AuthHint = "log in with `agent login`, or set CURSOR_API_KEY in [backends." + Name + "].env"
	cfg.WarnUnsupported = true
	cfg.Extensions = newExtensions().handlers()
	return nil, nil
}
