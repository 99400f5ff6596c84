package occonfig

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// modePermissions are OpenCode's permission.edit and permission.bash for
// each permission mode.
var modePermissions = map[runtime.PermissionMode][2]string{
	runtime.ModeDefault:     {"ask", "ask"},
	runtime.ModeAcceptEdits: {"allow", "ask"},
	runtime.ModePlan:        {"deny", "deny"},
	runtime.ModeFullAccess:  {"allow", "allow"},
}

// WithPermissionMode is the inline config (OPENCODE_CONFIG_CONTENT, which
// OpenCode gives the highest precedence) with mode's permission.edit and
// permission.bash set, both at the top level and on agent (the agent the
// session runs, "build" by default), whose own permissions would otherwise
// win over the top level's. content may be empty.
func WithPermissionMode(content string, mode runtime.PermissionMode, agent string) (string, error) {
	p, ok := modePermissions[mode]
	if !ok {
		return "", fmt.Errorf("permission mode %q is not one OpenCode's permission config has", mode)
	}
	cfg := map[string]any{}
	if strings.TrimSpace(content) != "" {
		parsed, err := parse([]byte(content))
		if err != nil {
			return "", fmt.Errorf("OPENCODE_CONFIG_CONTENT: %w", err)
		}
		cfg = parsed
	}
	if agent == "" {
		agent = "build"
	}
	perm := map[string]any{"edit": p[0], "bash": p[1]}
	Merge(cfg, map[string]any{
		"permission": perm,
		"agent":      map[string]any{agent: map[string]any{"permission": perm}},
	})
	out, err := json.Marshal(cfg)
	return string(out), err
}

// WithMCPServers is the inline config with servers as OpenCode's mcp
// entries: a stdio server is {"type":"local","command":[cmd, args...],
// "environment":{...}}, an http or sse one {"type":"remote","url",
// "headers"}. The values go to the server's environment only, never argv.
func WithMCPServers(content string, servers []runtime.MCPServer) (string, error) {
	cfg := map[string]any{}
	if strings.TrimSpace(content) != "" {
		parsed, err := parse([]byte(content))
		if err != nil {
			return "", fmt.Errorf("OPENCODE_CONFIG_CONTENT: %w", err)
		}
		cfg = parsed
	}
	mcp := map[string]any{}
	for _, s := range servers {
		switch s.Type {
		case runtime.MCPHTTP, runtime.MCPSSE:
			mcp[s.Name] = map[string]any{"type": "remote", "url": s.URL, "headers": s.HeaderMap(), "enabled": true}
		default:
			mcp[s.Name] = map[string]any{"type": "local", "command": append([]string{s.Command}, s.Args...),
				"environment": s.EnvMap(), "enabled": true}
		}
	}
	Merge(cfg, map[string]any{"mcp": mcp})
	out, err := json.Marshal(cfg)
	return string(out), err
}
