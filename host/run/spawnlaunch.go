package run

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/loop"
	hostrt "github.com/avenor-go/avenor/host/runner"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// A spawn's permission mode and launch context
// (docs/control-protocol.md#spawn): the params permission_mode,
// append_system_prompt, allowed_tools and mcp_config, read and checked as
// `avenor run` reads its flags (LaunchSettings), carried into the
// runtime's options, its broker and its durable record.

// paramKey names a spawn param in an error: the key itself.
func paramKey(key string) string { return key }

// spawnLaunch reads a spawn's permission mode and launch context from its
// layered settings; an append_system_prompt @FILE and an mcp_config path
// that are relative are the spawn's dir's (dir, absolute), whichever layer
// set them: the supervisor's working directory is not the caller's.
func spawnLaunch(res *Resolved, dir string, getenv func(string) string) (Launch, error) {
	s := res.Settings
	if p, ok := strings.CutPrefix(s.AppendSystemPrompt, "@"); ok && p != "" && !filepath.IsAbs(p) {
		s.AppendSystemPrompt = "@" + filepath.Join(dir, p)
	}
	if s.MCPConfig != "" && !filepath.IsAbs(s.MCPConfig) {
		s.MCPConfig = filepath.Join(dir, s.MCPConfig)
	}
	return readLaunch(s, res.Provenance, getenv, paramKey)
}

// applyLaunch gives o the spawn's permission mode and launch context.
func (r SpawnBackend) applyLaunch(o *hostrt.Options) {
	o.PermissionMode, o.LaunchContext = r.Asked.Mode, r.Asked.Context
}

// MaxAllowedToolsParam bounds the allowed_tools param's JSON, in bytes.
const MaxAllowedToolsParam = MaxAllowedTools * (MaxToolName + 4)

// AllowedToolsParam reads the allowed_tools param: a JSON array of tool
// names or one string of names separated by commas, as --allowed-tools
// takes them; [] and "" allow no tool. It returns the setting's string
// form and whether the param was given (absent and null are not: the
// runtime's defaults). An array entry holding a comma is refused, as
// the string form could not carry it.
func AllowedToolsParam(raw json.RawMessage) (string, bool, error) {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	bad := func(detail string) error {
		return fmt.Errorf("allowed_tools: want an array of tool names ([\"Read\",\"Grep\"]) or a string of names separated by commas (\"Read,Grep\"); [] or \"\" for no tool%s", detail)
	}
	if len(raw) > MaxAllowedToolsParam {
		return "", false, bad(fmt.Sprintf(": %d bytes is over the limit of %d", len(raw), MaxAllowedToolsParam))
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", false, bad("")
		}
		if _, err := allowedTools("allowed_tools", s); err != nil {
			return "", false, err
		}
		return s, true, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", false, bad("")
	}
	for i, name := range list {
		if strings.Contains(name, ",") {
			return "", false, fmt.Errorf("allowed_tools: entry %d %q holds a comma, which no tool name does", i+1, name)
		}
		if strings.TrimSpace(name) == "" {
			return "", false, fmt.Errorf("allowed_tools: entry %d is empty; give tool names, or [] for no tool", i+1)
		}
	}
	s := strings.Join(list, ",")
	if _, err := allowedTools("allowed_tools", s); err != nil {
		return "", false, err
	}
	return s, true, nil
}

// CheckLaunch refuses, before anything of the spawn runs, a permission
// mode or launch-context field that a backend it runs does not declare
// (docs/backends.md#capability-matrix): each such backend's plugin is
// started to describe itself and stopped again. Nothing is started when
// nothing was asked. A refusal is a -32000 whose data names the backend,
// the refused key and the modes the backend supports.
func (sp Spawned) CheckLaunch(ctx context.Context) error {
	if sp.Phased != nil {
		return sp.Phased.CheckLaunch(ctx, sp.Backend.Asked, paramKey)
	}
	return checkBackendLaunch(ctx, sp.Backend.Backend, sp.Backend.Asked, paramKey)
}

// checkBackendLaunch refuses asked when b does not declare it; name names
// the refused key (a flag or a param).
func checkBackendLaunch(ctx context.Context, b hostrt.Backend, asked Launch, name func(string) string) error {
	if asked.Mode == "" && asked.Context.IsZero() {
		return nil
	}
	info, err := describe(ctx, b)
	if err != nil {
		return err
	}
	return launchRefusal(info, asked, name)
}

// launchRefusal is sdk.CheckLaunch's refusal of asked as a typed error:
// its text names the key (name's spelling) and data says what the backend
// supports.
func launchRefusal(info sdk.BackendInfo, asked Launch, name func(string) string) error {
	err := sdk.CheckLaunch(info, asked.Mode, asked.Context)
	if err == nil {
		return nil
	}
	key := "permission_mode"
	for _, f := range []struct {
		set bool
		cap sdk.Capability
		key string
	}{
		{asked.Context.AppendSystemPrompt != "", sdk.CapAppendSystemPrompt, "append_system_prompt"},
		{asked.Context.AllowedTools != nil, sdk.CapAllowedTools, "allowed_tools"},
		{len(asked.Context.MCPServers) > 0, sdk.CapMCPServers, "mcp_config"},
	} {
		if f.set && info.Capability(f.cap) == sdk.Unsupported && (asked.Mode == "" || info.Capability(sdk.ModeCapability(asked.Mode)) != sdk.Unsupported) {
			key = f.key
			break
		}
	}
	modes := []string{}
	for _, m := range info.SupportedModes() {
		modes = append(modes, string(m))
	}
	msg := strings.NewReplacer("--permission-mode", name("permission_mode"), "--append-system-prompt", name("append_system_prompt"),
		"--allowed-tools", name("allowed_tools"), "--mcp-config", name("mcp_config")).Replace(err.Error())
	msg += "; nothing was started"
	return &LaunchRefusedError{msg: msg, rpc: &control.Error{Code: control.CodeServerError, Message: msg, Data: map[string]any{
		"backend": info.Name, "refused": key, "supported_modes": modes,
	}}}
}

// LaunchRefusedError is a permission mode or launch-context field a
// backend does not declare, refused before anything started. On the
// control socket it is a -32000 whose data names the backend, the refused
// key and the modes the backend supports.
type LaunchRefusedError struct {
	msg string
	rpc *control.Error
}

func (e *LaunchRefusedError) Error() string { return e.msg }

// Unwrap is the control error the socket answers with.
func (e *LaunchRefusedError) Unwrap() error { return e.rpc }

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
