package run

import (
	"context"
	"fmt"
	"os"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/loop"
	hostrt "github.com/avenor-go/avenor/host/runner"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// The permission mode and launch context of a loop or team's phases
// (docs/loop.md#phase): a roster entry's or a phase's own keys over the
// run's, checked against every phase's backend before the first phase
// starts, applied per phase with the broker deciding under the phase's
// mode.

// CheckLaunch refuses, before any phase starts, a permission mode or
// launch-context field that a phase's backend does not declare: the run's
// (asked), with the phase's own keys (its roster entry's, then its own)
// over it. Each backend's plugin is started once, to describe itself,
// only when some phase on it asks for something. A phase's keys that do
// not read (an @FILE missing, a malformed mcp_config) are refused too.
// name names the run's keys in a refusal (FlagName, or paramKey).
func (wf *Phased) CheckLaunch(ctx context.Context, asked Launch, name func(string) string) error {
	infos := map[string]sdk.BackendInfo{}
	for _, id := range wf.identities() {
		l, err := asked.phase(id.LaunchKeys)
		if err != nil {
			return err
		}
		if l.Mode == "" && l.Context.IsZero() {
			continue
		}
		info, ok := infos[id.Backend]
		if !ok {
			b, err := wf.Backend(id.Backend)
			if err != nil {
				return err
			}
			if info, err = describe(ctx, b); err != nil {
				return err
			}
			infos[id.Backend] = info
		}
		if err := launchRefusal(info, l, name); err != nil {
			if id.LaunchKeys.IsZero() {
				return err
			}
			return fmt.Errorf("a phase's own launch settings: %w", err)
		}
	}
	return nil
}

// identities lists who runs each prompt phase, with its launch keys.
func (wf *Phased) identities() []loop.Identity {
	if wf.Loop != nil {
		return wf.Loop.Identities(wf.Identity)
	}
	return wf.Team.Identities(wf.Identity)
}

// describe starts b's plugin, reads what its backend declares and stops it.
func describe(ctx context.Context, b hostrt.Backend) (sdk.BackendInfo, error) {
	if b.Launch == nil {
		return sdk.BackendInfo{}, fmt.Errorf("backend %q: no plugin to ask what it supports", b.Name)
	}
	l, err := b.Launch(ctx)
	if err != nil {
		return sdk.BackendInfo{}, err
	}
	info := l.Backend.Info()
	l.Client.Kill()
	if info.Name == "" {
		info.Name = b.Name
	}
	return info, nil
}

// phase is the launch of a phase whose own keys are k: l with every key k
// sets read (as the run's flags are) and put in its place.
func (l Launch) phase(k loop.LaunchKeys) (Launch, error) {
	if k.IsZero() {
		return l, nil
	}
	s := config.Settings{PermissionMode: k.PermissionMode, AppendSystemPrompt: k.AppendSystemPrompt, MCPConfig: k.MCPConfig}
	prov := config.Provenance{}
	if tools, ok := k.ToolList(); ok {
		s.AllowedTools, prov["allowed_tools"] = tools, config.LayerFlag
	}
	own, err := readLaunch(s, prov, os.Getenv, func(key string) string { return "phase " + key })
	if err != nil {
		return Launch{}, err
	}
	if k.PermissionMode != "" {
		l.Mode = own.Mode
	}
	if k.AppendSystemPrompt != "" {
		l.Context.AppendSystemPrompt = own.Context.AppendSystemPrompt
	}
	if k.AllowedTools != nil {
		l.Context.AllowedTools = own.Context.AllowedTools
	}
	if k.MCPConfig != "" {
		l.Context.MCPServers = own.Context.MCPServers
	}
	return l, nil
}

// phaseLauncher is loop.Runtimes.Launch of a runtime: a phase's own keys
// applied over o's, and under its own mode a session of the runtime's
// broker with that mode.
func (rt *Runtime) phaseLauncher(k loop.LaunchKeys, o *hostrt.Options) (hostrt.PermissionsFunc, error) {
	l, err := Launch{Mode: o.PermissionMode, Context: o.LaunchContext}.phase(k)
	if err != nil {
		return nil, err
	}
	o.PermissionMode, o.LaunchContext = l.Mode, l.Context
	if k.PermissionMode == "" {
		return nil, nil
	}
	b := rt.broker
	return func(sessionID string) hostrt.Permissions { return b.ModeSession(sessionID, l.Mode) }, nil
}

// checkPhasedLaunch refuses, before the first phase of `avenor run
// --loop-file/--team-file` starts, what a phase's backend cannot honour.
func checkPhasedLaunch(ctx context.Context, spec Spec) error {
	if spec.Phased == nil {
		return nil
	}
	o := spec.Options
	return spec.Phased.CheckLaunch(ctx, Launch{Mode: o.PermissionMode, Context: o.LaunchContext}, FlagName)
}

// entryLaunch gives set, the settings a spawn gave, its direct-mode roster
// entry's launch keys (docs/loop.md#rosters) where set gives none: the
// spawn's own params come first, the entry's over the config's.
func entryLaunch(k loop.LaunchKeys, set map[string]any) {
	for key, v := range map[string]string{"permission_mode": k.PermissionMode, "append_system_prompt": k.AppendSystemPrompt, "mcp_config": k.MCPConfig} {
		if _, given := set[key]; !given && v != "" {
			set[key] = v
		}
	}
	if tools, ok := k.ToolList(); ok {
		if _, given := set["allowed_tools"]; !given {
			set["allowed_tools"] = tools
		}
	}
}

// entrySettings gives s, a run's layered settings, its direct-mode roster
// entry's launch keys where given (the flags the command line set) has
// none: the flags come first, the entry's over the config's.
func entrySettings(k loop.LaunchKeys, s *config.Settings, prov config.Provenance, given func(string) bool) {
	for _, f := range []struct {
		key string
		dst *string
		v   string
	}{
		{"permission_mode", &s.PermissionMode, k.PermissionMode},
		{"append_system_prompt", &s.AppendSystemPrompt, k.AppendSystemPrompt},
		{"mcp_config", &s.MCPConfig, k.MCPConfig},
	} {
		if f.v != "" && !given(f.key) {
			*f.dst = f.v
		}
	}
	if tools, ok := k.ToolList(); ok && !given("allowed_tools") {
		s.AllowedTools, prov["allowed_tools"] = tools, config.LayerFlag
	}
}
