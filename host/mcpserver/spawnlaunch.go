package mcpserver

import (
	"encoding/json"
	"path/filepath"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/sandbox"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// permissionModes is avenor_spawn's permission_mode vocabulary.
var permissionModes = func() []string {
	out := make([]string, len(sdk.PermissionModes))
	for i, m := range sdk.PermissionModes {
		out[i] = string(m)
	}
	return out
}()

// LaunchParams are the spawn params of a run's permission mode and launch
// context (docs/control-protocol.md#spawn), passed to the supervisor as
// given: it reads and checks them as avenor run reads its flags, and
// refuses, before anything starts, what the backend does not declare.
type LaunchParams struct {
	PermissionMode     string `json:"permission_mode,omitempty"`
	AppendSystemPrompt string `json:"append_system_prompt,omitempty"`
	// AllowedTools is the list as JSON: absent for the runtime's
	// defaults, [] for no tool.
	AllowedTools json.RawMessage `json:"allowed_tools,omitempty"`
	MCPConfig    string          `json:"mcp_config,omitempty"`

	// The run's sandbox (docs/sandbox.md): a follow-up runs inside the
	// same boundary, never outside it. Paths are absolute (repo_dir's).
	Sandbox           string   `json:"sandbox,omitempty"`
	SandboxNetwork    string   `json:"sandbox_network,omitempty"`
	SandboxAllowWrite []string `json:"sandbox_allow_write,omitempty"`
	SandboxDenyRead   []string `json:"sandbox_deny_read,omitempty"`
	SandboxRecover    bool     `json:"sandbox_recover,omitempty"`
}

// sandboxProfiles is avenor_spawn's sandbox vocabulary.
var sandboxProfiles = func() []string {
	out := make([]string, len(sdk.SandboxProfiles))
	for i, p := range sdk.SandboxProfiles {
		out[i] = string(p)
	}
	return out
}()

// launch records a's launch params in rec; nil when it gave none. A
// relative @FILE or mcp_config is repo_dir's (rec.Dir), made absolute here
// so that a follow-up reads the same file.
func (a spawnArgs) launch(rec *Record) error {
	l := LaunchParams{PermissionMode: a.PermissionMode, AppendSystemPrompt: a.AppendSystemPrompt, MCPConfig: a.MCPConfig,
		Sandbox: a.Sandbox, SandboxNetwork: a.SandboxNetwork, SandboxRecover: a.SandboxRecover,
		SandboxAllowWrite: sandbox.AbsUnder(rec.Dir, a.SandboxAllowWrite), SandboxDenyRead: sandbox.AbsUnder(rec.Dir, a.SandboxDenyRead)}
	if a.AllowedTools != nil {
		raw, err := json.Marshal(a.AllowedTools)
		if err != nil {
			return err
		}
		l.AllowedTools = raw
	}
	if len(a.AppendSystemPrompt) > 1 && a.AppendSystemPrompt[0] == '@' && !filepath.IsAbs(a.AppendSystemPrompt[1:]) {
		l.AppendSystemPrompt = "@" + filepath.Join(rec.Dir, a.AppendSystemPrompt[1:])
	}
	if l.MCPConfig != "" && !filepath.IsAbs(l.MCPConfig) {
		l.MCPConfig = filepath.Join(rec.Dir, l.MCPConfig)
	}
	sandboxed := l.Sandbox != "" || l.SandboxNetwork != "" || len(l.SandboxAllowWrite) > 0 || len(l.SandboxDenyRead) > 0 || l.SandboxRecover
	if l.PermissionMode != "" || l.AppendSystemPrompt != "" || l.MCPConfig != "" || l.AllowedTools != nil || sandboxed {
		rec.Launch = &l
	}
	return nil
}

// spawnCall is the spawn's params: p with, when rec has them, its launch
// and sandbox params.
func (rec *Record) spawnCall(p client.SpawnParams) client.SpawnParams {
	if l := rec.Launch; l != nil {
		p.PermissionMode, p.AppendSystemPrompt, p.MCPConfig = l.PermissionMode, l.AppendSystemPrompt, l.MCPConfig
		if l.AllowedTools != nil {
			p.AllowedTools = l.AllowedTools
		}
		p.Sandbox, p.SandboxNetwork, p.SandboxAllowWrite, p.SandboxDenyRead = l.Sandbox, l.SandboxNetwork, l.SandboxAllowWrite, l.SandboxDenyRead
		if l.SandboxRecover {
			p.SandboxRecover = client.Bool(true)
		}
	}
	return p
}
