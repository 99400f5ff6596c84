package run

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/avenor-go/avenor/host/control"
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

// CheckLaunch refuses, before anything of the spawn runs, spend limits
// its backend cannot be held to (CheckSpend), and a permission
// mode or launch-context field that a backend it runs does not declare
// (docs/backends.md#capability-matrix): each such backend's plugin is
// started to describe itself and stopped again. Nothing is started when
// nothing was asked. A refusal is a -32000 whose data names the backend,
// the refused key and the modes the backend supports.
func (sp Spawned) CheckLaunch(ctx context.Context) error {
	if err := sp.CheckSpend(ctx); err != nil {
		return err
	}
	if err := sp.checkSandbox(ctx); err != nil {
		return err
	}
	if err := sp.checkSpawnRateLimit(ctx); err != nil {
		return err
	}
	if err := sp.checkSpawnRecover(ctx); err != nil {
		return err
	}
	if err := sp.checkSpawnCompaction(ctx); err != nil {
		return err
	}
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
