package loop

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/avenor-go/avenor/host/event"
	hostrt "github.com/avenor-go/avenor/host/runner"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// LaunchKeys are a roster entry's or a phase's permission mode and launch
// context as its file writes them (docs/loop.md#phase):
// what avenor run's --permission-mode, --append-system-prompt,
// --allowed-tools and --mcp-config say for the run. A key that is set
// replaces the run's for that phase; a phase's own keys replace its roster
// entry's. Relative @FILE and mcp_config paths are the file's directory's.
// The runner that resolves the phases reads and checks the files and asks
// each phase's backend whether it honours them, before any phase starts.
type LaunchKeys struct {
	PermissionMode     string `json:"permission_mode,omitempty"`
	AppendSystemPrompt string `json:"append_system_prompt,omitempty"`
	// AllowedTools, when not nil, is the exact tool list; [] allows no tool.
	AllowedTools *[]string `json:"allowed_tools,omitempty"`
	MCPConfig    string    `json:"mcp_config,omitempty"`
}

// IsZero reports whether k sets nothing.
func (k LaunchKeys) IsZero() bool {
	return k.PermissionMode == "" && k.AppendSystemPrompt == "" && k.AllowedTools == nil && k.MCPConfig == ""
}

// Over is k with every key top sets replacing k's.
func (k LaunchKeys) Over(top LaunchKeys) LaunchKeys {
	if top.PermissionMode != "" {
		k.PermissionMode = top.PermissionMode
	}
	if top.AppendSystemPrompt != "" {
		k.AppendSystemPrompt = top.AppendSystemPrompt
	}
	if top.AllowedTools != nil {
		k.AllowedTools = top.AllowedTools
	}
	if top.MCPConfig != "" {
		k.MCPConfig = top.MCPConfig
	}
	return k
}

// ToolList is AllowedTools as --allowed-tools spells it, and whether it is
// set.
func (k LaunchKeys) ToolList() (string, bool) {
	if k.AllowedTools == nil {
		return "", false
	}
	return strings.Join(*k.AllowedTools, ","), true
}

// rel makes k's relative @FILE and mcp_config paths dir's.
func (k LaunchKeys) rel(dir string) LaunchKeys {
	if p, ok := strings.CutPrefix(k.AppendSystemPrompt, "@"); ok && p != "" && !filepath.IsAbs(p) {
		k.AppendSystemPrompt = "@" + filepath.Join(dir, p)
	}
	if k.MCPConfig != "" && !filepath.IsAbs(k.MCPConfig) {
		k.MCPConfig = filepath.Join(dir, k.MCPConfig)
	}
	return k
}

// check refuses what no backend could take: a mode outside the vocabulary,
// a tool name that is empty or holds a comma.
func (k LaunchKeys) check() error {
	if _, err := sdk.ParsePermissionMode(k.PermissionMode); err != nil {
		return fmt.Errorf("permission_mode: %w", err)
	}
	if k.AllowedTools != nil {
		for i, t := range *k.AllowedTools {
			if strings.TrimSpace(t) == "" || strings.Contains(t, ",") {
				return fmt.Errorf("allowed_tools: entry %d %q is not a tool name", i+1, t)
			}
		}
	}
	return nil
}

// Identities lists who runs each prompt phase of the config, nested
// configs included, with the phase's launch keys: what a run checks
// against the phases' backends before it starts.
func (c *LoopConfig) Identities(run Identity) []Identity {
	return identities(run, c.Roster, [][]Phase{c.Pre, c.Loop, c.Post}, []string{KindPre, KindLoop, KindPost})
}

// Identities is LoopConfig.Identities for a team config.
func (c *TeamConfig) Identities(run Identity) []Identity {
	return identities(run, c.Roster, [][]Phase{c.Pre, c.Team, c.Post}, []string{KindPre, KindTeam, KindPost})
}

func identities(run Identity, roster *Roster, sections [][]Phase, kinds []string) []Identity {
	var out []Identity
	for k, s := range sections {
		for i := range s {
			p := &s[i]
			switch {
			case p.NestedLoop != nil:
				out = append(out, p.NestedLoop.Identities(run)...)
			case p.NestedTeam != nil:
				out = append(out, p.NestedTeam.Identities(run)...)
			default:
				if id, err := run.forPhase(p, kinds[k], roster); err == nil {
					out = append(out, id)
				}
			}
		}
	}
	return out
}

// phaseLaunch applies k, a phase's own launch keys, to o and returns the
// phase's permission resolver (rt.Permissions unless its mode is its own).
func (rt *Runtimes) phaseLaunch(k LaunchKeys, o *hostrt.Options) (hostrt.PermissionsFunc, error) {
	perms := rt.Permissions
	if k.IsZero() {
		return perms, nil
	}
	if rt.Launch == nil {
		return nil, errors.New("this run cannot apply a phase's own permission mode or launch context")
	}
	own, err := rt.Launch(k, o)
	if err != nil {
		return nil, err
	}
	if own != nil {
		perms = own
	}
	return perms, nil
}

// failPhase ends a phase that cannot start: an avenor.error and the
// message on stderr.
func (rt *Runtimes) failPhase(s Spec, err error) Outcome {
	msg := fmt.Sprintf("phase %q: %v", s.Name, err)
	_, _ = rt.Base.Writer.Write(event.Event{"event": string(event.TypeError), "source": "validation", "message": msg})
	if rt.Base.Stderr != nil {
		fmt.Fprintf(rt.Base.Stderr, "avenor: %s\n", msg)
	}
	return Outcome{StopReason: sdk.StopError}
}
