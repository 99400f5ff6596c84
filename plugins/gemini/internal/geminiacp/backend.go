package geminiacp

import (
	"github.com/avenor-go/avenor/sdk/acp"
	"github.com/avenor-go/avenor/sdk/procsession"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Name is the backend's name.
const Name = "gemini-acp"

// BinaryEnv overrides the gemini binary (the "binary" backend option wins).
const BinaryEnv = "AVENOR_GEMINI_BIN"

const installHint = "install it with: npm install -g @google/gemini-cli (0.36 or newer for ACP; or set the backend option binary, or " + BinaryEnv + ", to its path)"

// New is gemini-acp. Honest capabilities (docs/backends.md#capability-matrix, decision
// 13): --model goes through Gemini's session/set_model, a call the ACP
// schema has since dropped, so model selection is experimental (a version
// without it gets a warning, not a silent default); resume is session/load,
// which Gemini replays after its answer and which loses sessions loaded in
// the minute they were made (gemini-cli #28693), so it is experimental too.
func New() runtime.Backend {
	return acp.NewBackend(acp.BackendSpec{
		Info: runtime.BackendInfo{
			Name:        Name,
			Description: "Gemini CLI over ACP: `gemini --acp --approval-mode default`, one process per session",
			Capabilities: procsession.Capabilities(runtime.CapPermissionRelay, runtime.CapPrewarm,
				runtime.ModeCapability(runtime.ModeDefault), runtime.ModeCapability(runtime.ModeAcceptEdits),
				runtime.ModeCapability(runtime.ModePlan), runtime.ModeCapability(runtime.ModeFullAccess),
				runtime.CapMCPServers).
				With(runtime.CapResume, runtime.Experimental).
				With(runtime.CapModelSelection, runtime.Experimental),
			ResumeScope: runtime.ResumeCrossProcess,
			EventTypes:  acp.EventTypes,
		},
		Binary:      "gemini",
		BinaryEnv:   BinaryEnv,
		InstallHint: installHint,
		// Gemini re-execs itself through a wrapper that orphans the real
		// agent when killed; without the relaunch the group holds it all.
		EnvDefaults: map[string]string{"GEMINI_CLI_NO_RELAUNCH": "true"},
		Configure:   configure,
	})
}

// approvalModes maps the permission modes onto Gemini CLI's
// --approval-mode; no mode is Gemini's default, as before. full-access is
// auto_edit: shell commands still come to the host as permission requests,
// which the broker allows under full-access (yolo would approve every
// tool, MCP and web ones too — broader than asked).
var approvalModes = map[runtime.PermissionMode]string{
	"":                      "default",
	runtime.ModeDefault:     "default",
	runtime.ModeAcceptEdits: "auto_edit",
	runtime.ModePlan:        "plan",
	runtime.ModeFullAccess:  "auto_edit",
}

func configure(req runtime.OpenRequest, cfg *acp.Config) (func(), error) {
	if req.ServerURL != "" {
		return nil, runtime.Errorf(runtime.FaultUser, "%s does not use a server URL (--server-url); Gemini CLI's endpoint is set with GOOGLE_GEMINI_BASE_URL in [backends.%s].env", Name, Name)
	}
	// The session's cwd is the project; Gemini takes no --cwd (docs/backends.md#gemini-acp-plugin-gemini).
	mode, ok := approvalModes[req.PermissionMode]
	if !ok {
		return nil, runtime.Errorf(runtime.FaultUser, "%s: permission mode %q is not one Gemini CLI has", Name, req.PermissionMode).WithCode(runtime.CodeUnsupported)
	}
	cfg.Args = []string{"--acp", "--approval-mode", mode}
	cfg.WarnUnsupported = true
	cfg.AuthHint = "set GEMINI_API_KEY (and GOOGLE_GEMINI_BASE_URL for a custom endpoint), or select an auth type in ~/.gemini/settings.json"
	return nil, nil
}
