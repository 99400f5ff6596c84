package runner

import (
	"fmt"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// checkOpen refuses, before Open, what the backend does not declare: a
// thinking level, a permission mode, a launch-context field or a sandbox
// (docs/backends.md#capability-matrix).
func checkOpen(info sdk.BackendInfo, o Options) error {
	if err := CheckThinking(info, o.Thinking); err != nil {
		return err
	}
	if err := sdk.CheckImages(info, o.Images); err != nil {
		return err
	}
	if err := sdk.CheckLaunch(info, o.PermissionMode, o.LaunchContext); err != nil {
		return err
	}
	if err := sdk.CheckSandbox(info, o.Sandbox); err != nil {
		return err
	}
	if c := o.SandboxRecover.CheckBackend; o.SandboxRecover.On && c != nil {
		if err := c(info); err != nil {
			return err
		}
	}
	if o.RateLimit.Wait && info.Capability(sdk.CapRateLimitReset) == sdk.Unsupported {
		return fmt.Errorf("backend %s cannot wait on a rate limit: it does not report when a rate limit lifts (capability %s); drop --wait-on-rate-limit, or use a backend that declares it", info.Name, sdk.CapRateLimitReset)
	}
	if o.AutoCompactPct > 0 && info.Capability(sdk.CapCompaction) == sdk.Unsupported {
		return fmt.Errorf("backend %s cannot compact its context (capability %s); drop --auto-compact-pct, or use a backend that declares it (avenor backends --json)", info.Name, sdk.CapCompaction)
	}
	if o.Spend != nil {
		return o.Spend.Check(info, o.Model)
	}
	return nil
}

// addSandboxFields records in session.start the boundary the runtime runs
// inside (docs/events.md#sessionstart): its mechanism, profile and
// network. Nothing is added without one.
func addSandboxFields(start map[string]any, sb sdk.Sandbox) {
	if !sb.Active() {
		return
	}
	network := sb.Network
	if network == "" {
		network = sdk.SandboxNetworkHost
	}
	start["sandbox"] = map[string]any{"mechanism": sb.Mechanism, "profile": string(sb.Profile), "network": network}
}

// addLaunchFields records in session.start what the session was asked to
// run under (docs/events.md#sessionstart): the permission mode and what it
// allows, the length of the appended system prompt, the tool list and the
// MCP servers by name. Nothing is added when nothing was asked; no MCP
// env or header value is ever recorded.
func addLaunchFields(start map[string]any, mode sdk.PermissionMode, l sdk.LaunchContext) {
	if mode != "" {
		edits, commands := mode.Allows()
		start["permission_mode"] = string(mode)
		start["permission_allows"] = map[string]any{"edits": edits, "commands": commands}
	}
	if l.AppendSystemPrompt != "" {
		start["append_system_prompt_length"] = len(l.AppendSystemPrompt)
	}
	if l.AllowedTools != nil {
		start["allowed_tools"] = append([]string{}, l.AllowedTools...)
	}
	if len(l.MCPServers) > 0 {
		names := make([]string, len(l.MCPServers))
		for i, s := range l.MCPServers {
			names[i] = s.Name
		}
		start["mcp_servers"] = names
	}
}
