package loop

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestPhaseLaunchKeys: a phase's own launch keys override its roster
// entry's, which override none (the run's); relative paths are the
// file's directory's; what no backend could take is refused at load.
func TestPhaseLaunchKeys(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"r/roster.json": `{"e":{"backend":"b","model":"m","permission_mode":"plan","append_system_prompt":"@sys.md","allowed_tools":["Read"]}}`,
		"team.json": `{"roster_file":"r/roster.json","team":[
			{"name":"own","prompt":"x","permission_mode":"accept-edits","mcp_config":"mcp.json"},
			{"name":"entry","prompt":"x","roster_entry":"e"},
			{"name":"both","prompt":"x","roster_entry":"e","permission_mode":"full-access","allowed_tools":[]},
			{"name":"none","prompt":"x"}]}`,
	})
	c, err := LoadTeam(filepath.Join(dir, "team.json"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ids := c.Identities(Identity{Backend: "run"})
	if len(ids) != 4 {
		t.Fatalf("%d identities, want 4", len(ids))
	}
	type want struct {
		backend, mode, prompt, mcp, tools string
		toolsSet                          bool
	}
	for i, w := range []want{
		{"run", "accept-edits", "", filepath.Join(dir, "mcp.json"), "", false},
		{"b", "plan", "@" + filepath.Join(dir, "r", "sys.md"), "", "Read", true},
		{"b", "full-access", "@" + filepath.Join(dir, "r", "sys.md"), "", "", true},
		{"run", "", "", "", "", false},
	} {
		id := ids[i]
		tools, set := id.ToolList()
		if id.Backend != w.backend || id.PermissionMode != w.mode || id.AppendSystemPrompt != w.prompt || id.MCPConfig != w.mcp || tools != w.tools || set != w.toolsSet {
			t.Errorf("phase %d: %+v (tools %q set %v); want %+v", i, id, tools, set, w)
		}
	}
	if !ids[3].LaunchKeys.IsZero() {
		t.Errorf("a phase without keys has %+v", ids[3].LaunchKeys)
	}
}

func TestPhaseLaunchKeysRefused(t *testing.T) {
	for _, tc := range []struct {
		name, config, want string
	}{
		{"unknown mode", `{"team":[{"name":"a","prompt":"x","permission_mode":"yolo"}]}`,
			`phase[name a]: permission_mode: invalid permission mode "yolo"`},
		{"tool name with a comma", `{"team":[{"name":"a","prompt":"x","allowed_tools":["Read,Grep"]}]}`,
			`phase[name a]: allowed_tools: entry 1 "Read,Grep" is not a tool name`},
		{"keys on a nested phase", `{"team":[{"name":"a","team_file":"other.json","permission_mode":"plan"}]}`,
			`phase[name a]: permission_mode, append_system_prompt, allowed_tools and mcp_config apply to prompt phases`},
		{"misspelt key", `{"team":[{"name":"a","prompt":"x","permission_mod":"plan"}]}`, `unknown field "permission_mod"`},
		{"roster entry with an unknown mode", `{"roster_file":"r.json","team":[{"name":"a","prompt":"x","roster_entry":"e"}]}`,
			`entry "e": permission_mode: invalid permission mode "ask"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"team.json": tc.config, "r.json": `{"e":{"backend":"b","model":"m","permission_mode":"ask"}}`})
			_, err := LoadTeam(filepath.Join(dir, "team.json"), LoadOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want an error with %q", err, tc.want)
			}
		})
	}
}
