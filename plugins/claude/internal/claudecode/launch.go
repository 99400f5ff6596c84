package claudecode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// claudeModes maps the permission modes onto Claude Code's
// --permission-mode. accept-edits is default, not acceptEdits: Claude
// Code's acceptEdits also runs filesystem shell commands (`echo x > f`)
// without asking, broader than "ask before commands"; under default every
// edit comes to the host as a can_use_tool request, which the broker
// allows under accept-edits. full-access is acceptEdits: the commands it
// does not run unasked come to the host too, which the broker allows
// (bypassPermissions would skip the host altogether, and Claude Code
// refuses it as root).
var claudeModes = map[runtime.PermissionMode]string{
	runtime.ModeDefault:     "default",
	runtime.ModeAcceptEdits: "default",
	runtime.ModePlan:        "plan",
	runtime.ModeFullAccess:  "acceptEdits",
}

// launchCapabilities are the modes and launch-context fields the
// claude-stream backend passes to Claude Code natively.
var launchCapabilities = []runtime.Capability{
	runtime.ModeCapability(runtime.ModeDefault), runtime.ModeCapability(runtime.ModeAcceptEdits),
	runtime.ModeCapability(runtime.ModePlan), runtime.ModeCapability(runtime.ModeFullAccess),
	runtime.CapAppendSystemPrompt, runtime.CapAllowedTools, runtime.CapMCPServers,
}

// launchFiles holds what a session's launch context puts on disk: the
// appended system prompt and the MCP definitions (whose env and header
// values are credentials), in a 0700 directory of their own, so that
// neither is ever in argv. Remove deletes it.
type launchFiles struct{ dir string }

// Remove deletes the files; nil-safe.
func (f *launchFiles) Remove() {
	if f != nil && f.dir != "" {
		_ = os.RemoveAll(f.dir)
	}
}

// launchArgs is Claude Code's argv for req's permission mode and launch
// context: --permission-mode, --append-system-prompt-file, --tools (the
// exact built-in tool set; --allowedTools would pre-approve them, broader
// than asked) and --mcp-config with --strict-mcp-config (only the servers
// given). The files it writes are the caller's to Remove.
func launchArgs(req runtime.OpenRequest) ([]string, *launchFiles, error) {
	var args []string
	if req.PermissionMode != "" {
		m, ok := claudeModes[req.PermissionMode]
		if !ok {
			return nil, nil, runtime.Errorf(runtime.FaultUser, "%s: permission mode %q is not one Claude Code has", StreamName, req.PermissionMode).WithCode(runtime.CodeUnsupported)
		}
		args = append(args, "--permission-mode", m)
	}
	if req.Launch.AllowedTools != nil {
		args = append(args, "--tools", strings.Join(req.Launch.AllowedTools, ","))
	}
	if req.Launch.AppendSystemPrompt == "" && len(req.Launch.MCPServers) == 0 {
		return args, nil, nil
	}
	dir, err := os.MkdirTemp("", "avenor-claude-launch-*")
	if err != nil {
		return nil, nil, runtime.Errorf(runtime.FaultPlugin, "%s: a directory for the launch context: %v", StreamName, err)
	}
	files := &launchFiles{dir: dir}
	if p := req.Launch.AppendSystemPrompt; p != "" {
		path := filepath.Join(dir, "append-system-prompt.txt")
		if err := os.WriteFile(path, []byte(p), 0o600); err != nil {
			files.Remove()
			return nil, nil, runtime.Errorf(runtime.FaultPlugin, "%s: writing the appended system prompt: %v", StreamName, err)
		}
		args = append(args, "--append-system-prompt-file", path)
	}
	if len(req.Launch.MCPServers) > 0 {
		data, err := json.Marshal(map[string]any{"mcpServers": mcpServersJSON(req.Launch.MCPServers)})
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "mcp.json"), data, 0o600)
		}
		if err != nil {
			files.Remove()
			return nil, nil, runtime.Errorf(runtime.FaultPlugin, "%s: writing the MCP config: %v", StreamName, err)
		}
		args = append(args, "--mcp-config", filepath.Join(dir, "mcp.json"), "--strict-mcp-config")
	}
	return args, files, nil
}

// mcpServersJSON is the servers in Claude Code's --mcp-config shape.
func mcpServersJSON(servers []runtime.MCPServer) map[string]any {
	out := make(map[string]any, len(servers))
	for _, s := range servers {
		switch s.Type {
		case runtime.MCPHTTP, runtime.MCPSSE:
			out[s.Name] = map[string]any{"type": s.Type, "url": s.URL, "headers": s.HeaderMap()}
		default:
			args := s.Args
			if args == nil {
				args = []string{}
			}
			out[s.Name] = map[string]any{"type": "stdio", "command": s.Command, "args": args, "env": s.EnvMap()}
		}
	}
	return out
}
