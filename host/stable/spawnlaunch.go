package stable

import (
	"github.com/avenor-go/avenor/host/control"
	hostrun "github.com/avenor-go/avenor/host/run"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// The spawn params of the permission mode and launch context
// (docs/control-protocol.md#spawn): layered over the config as avenor
// run's flags are, read and checked by host/run.

// validateLaunch refuses a permission_mode outside the vocabulary and an
// allowed_tools that is neither a list nor a comma string: -32602.
func (p *SpawnParams) validateLaunch() error {
	if _, err := sdk.ParsePermissionMode(p.PermissionMode); err != nil {
		return control.InvalidParams("permission_mode: " + err.Error())
	}
	if _, _, err := hostrun.AllowedToolsParam(p.AllowedTools); err != nil {
		return control.InvalidParams(err.Error())
	}
	return nil
}

// launchKeys adds to out the launch params the spawn gave, as config keys.
func (p SpawnParams) launchKeys(out map[string]any) {
	for key, v := range map[string]string{"permission_mode": p.PermissionMode, "append_system_prompt": p.AppendSystemPrompt, "mcp_config": p.MCPConfig} {
		if v != "" {
			out[key] = v
		}
	}
	if tools, set, _ := hostrun.AllowedToolsParam(p.AllowedTools); set {
		out["allowed_tools"] = tools
	}
}

// asksLaunch reports whether the spawn's runtime runs under a permission
// mode or launch context (the params' or the config's): a warm runtime,
// opened without them, cannot serve it.
func asksLaunch(b hostrun.SpawnBackend) bool {
	return b.Asked.Mode != "" || !b.Asked.Context.IsZero()
}
