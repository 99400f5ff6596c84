package run

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/avenor-go/avenor/host/loop"
	hostrt "github.com/avenor-go/avenor/host/runner"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// LaunchRecord is a runtime's permission mode and launch context in its
// durable record, so that a supervisor that recovers it runs its
// follow-ups under the same ones. The MCP servers are recorded by name
// only: their env and header values may be credentials and never go into
// the state file; a recovery reads mcp_config again.
type LaunchRecord struct {
	Mode               string `json:"permission_mode,omitempty"`
	AppendSystemPrompt string `json:"append_system_prompt,omitempty"`
	// AllowedTools is null for the runtime's defaults, [] for no tool.
	AllowedTools []string `json:"allowed_tools"`
	MCPServers   []string `json:"mcp_servers,omitempty"`
}

// recordLaunch is o's launch record, nil when o asks for nothing.
func recordLaunch(o hostrt.Options) *LaunchRecord {
	lc := o.LaunchContext
	if o.PermissionMode == "" && lc.IsZero() {
		return nil
	}
	lr := &LaunchRecord{Mode: string(o.PermissionMode), AppendSystemPrompt: lc.AppendSystemPrompt, AllowedTools: lc.AllowedTools}
	for _, s := range lc.MCPServers {
		lr.MCPServers = append(lr.MCPServers, s.Name)
	}
	return lr
}

// launchSettings are the settings of req, the spawn, that a recovery
// resolves again: the mode, the appended system prompt and the tool list
// come from the record (an @FILE changed or removed since does not change
// them), so they are left out; mcp_config stays, its secrets read again,
// a direct-mode roster entry's included.
func (r Record) launchSettings(req SpawnRequest) map[string]any {
	if r.Launch == nil {
		return req.Settings
	}
	out := make(map[string]any, len(req.Settings))
	for k, v := range req.Settings {
		out[k] = v
	}
	if req.RosterEntry != "" && req.RosterFile != "" {
		path := req.RosterFile
		if !filepath.IsAbs(path) {
			dir := req.Dir
			if dir == "" {
				dir = r.Dir
			}
			if abs, err := filepath.Abs(dir); err == nil {
				path = filepath.Join(abs, path)
			}
		}
		if roster, err := loop.LoadRoster(path); err == nil {
			if e, err := roster.Lookup(req.RosterEntry); err == nil {
				entryLaunch(e.LaunchKeys, out)
			}
		}
	}
	delete(out, "permission_mode")
	delete(out, "append_system_prompt")
	delete(out, "allowed_tools")
	return out
}

// restoreLaunch gives b the record's permission mode and launch context;
// it says why the runtime cannot go on when its MCP servers no longer
// resolve to the ones it was spawned with. A record without launch
// context keeps none, whatever the config says now.
func (r Record) restoreLaunch(b *SpawnBackend) (dead string) {
	lr := r.Launch
	if lr == nil {
		b.Asked = Launch{}
		return ""
	}
	servers := b.Asked.Context.MCPServers
	var names []string
	for _, s := range servers {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != strings.Join(lr.MCPServers, ",") {
		return fmt.Sprintf("cannot be resumed after the supervisor's restart: its mcp_config now defines the servers %q, not %q", names, lr.MCPServers)
	}
	b.Asked = Launch{Mode: sdk.PermissionMode(lr.Mode), Context: sdk.LaunchContext{
		AppendSystemPrompt: lr.AppendSystemPrompt, AllowedTools: lr.AllowedTools, MCPServers: servers,
	}}
	return ""
}
