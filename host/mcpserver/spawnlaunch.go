package mcpserver

import (
	"encoding/json"
	"path/filepath"

	"github.com/avenor-go/avenor/client"
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
}

// launch records a's launch params in rec; nil when it gave none. A
// relative @FILE or mcp_config is repo_dir's (rec.Dir), made absolute here
// so that a follow-up reads the same file.
func (a spawnArgs) launch(rec *Record) error {
	l := LaunchParams{PermissionMode: a.PermissionMode, AppendSystemPrompt: a.AppendSystemPrompt, MCPConfig: a.MCPConfig}
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
	if l.PermissionMode != "" || l.AppendSystemPrompt != "" || l.MCPConfig != "" || l.AllowedTools != nil {
		rec.Launch = &l
	}
	return nil
}

// spawnCall is the spawn's params: p with, when rec has them, its launch
// params.
func (rec *Record) spawnCall(p client.SpawnParams) client.SpawnParams {
	if l := rec.Launch; l != nil {
		p.PermissionMode, p.AppendSystemPrompt, p.MCPConfig = l.PermissionMode, l.AppendSystemPrompt, l.MCPConfig
		if l.AllowedTools != nil {
			p.AllowedTools = l.AllowedTools
		}
	}
	return p
}
