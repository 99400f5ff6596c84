package run

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/avenor-go/avenor/host/control"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// SpawnParams are the params of spawn (docs/control-protocol.md#spawn). Relative
// loop_file, team_file and roster_file paths are resolved against the
// spawn's dir.
type SpawnParams struct {
	Prompt     string `json:"prompt,omitempty"`
	PromptFile string `json:"prompt_file,omitempty"`
	// Images are image files sent with the prompt (docs/run.md#images).
	Images            []string `json:"images,omitempty"`
	Dir               string   `json:"dir,omitempty"`
	Agent             string   `json:"agent,omitempty"`
	AgentProfile      string   `json:"agent_profile,omitempty"`
	Label             string   `json:"label,omitempty"`
	Model             string   `json:"model,omitempty"`
	Thinking          string   `json:"thinking,omitempty"`
	ServerURL         string   `json:"server_url,omitempty"`
	Backend           string   `json:"backend,omitempty"`
	OnEvent           string   `json:"on_event,omitempty"`
	SentinelFile      string   `json:"sentinel_file,omitempty"`
	PermissionHandler string   `json:"permission_handler,omitempty"`
	AutoApprove       *bool    `json:"auto_approve,omitempty"`
	// Questions: the runtime's own questions are relayed (docs/events.md#questionrequest).
	Questions *bool `json:"questions,omitempty"`
	// Timeout is the runtime's wall clock per run: a JSON number of seconds
	// or a Go duration string (docs/control-protocol.md#spawn).
	Timeout     json.RawMessage `json:"timeout,omitempty"`
	MaxRetries  *int            `json:"max_retries,omitempty"`
	LoopFile    string          `json:"loop_file,omitempty"`
	TeamFile    string          `json:"team_file,omitempty"`
	RosterFile  string          `json:"roster_file,omitempty"`
	RosterEntry string          `json:"roster_entry,omitempty"`
	// SessionID resumes a session: a parked runtime's of this supervisor
	// (continued in its plugin when it kept one), or any the backend knows.
	SessionID      string `json:"session_id,omitempty"`
	ParentID       string `json:"parent_id,omitempty"`
	ParentRunID    string `json:"parent_run_id,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	LabelDerived   bool   `json:"label_derived,omitempty"`

	// PermissionMode, AppendSystemPrompt (text, or @FILE relative to Dir),
	// AllowedTools (an array of tool names or a comma string) and MCPConfig
	// (a file, relative to Dir) are the runtime's permission mode and
	// launch context (launchParams).
	PermissionMode     string          `json:"permission_mode,omitempty"`
	AppendSystemPrompt string          `json:"append_system_prompt,omitempty"`
	AllowedTools       json.RawMessage `json:"allowed_tools,omitempty"`
	MCPConfig          string          `json:"mcp_config,omitempty"`

	// The turn watchdog (docs/unattended.md), as avenor run's
	// --progress-timeout, --tool-timeout, --watchdog and
	// --watchdog-restarts; durations as timeout takes them.
	ProgressTimeout  json.RawMessage `json:"progress_timeout,omitempty"`
	ToolTimeout      json.RawMessage `json:"tool_timeout,omitempty"`
	Watchdog         string          `json:"watchdog,omitempty"`
	WatchdogRestarts *int            `json:"watchdog_restarts,omitempty"`

	// The sandbox (docs/sandbox.md), as avenor run's --sandbox,
	// --sandbox-network, --sandbox-allow-write and --sandbox-deny-read:
	// sandbox and sandbox_network layer over the config's keys; the path
	// lists are absolute (spawnsandbox.go).
	Sandbox           string   `json:"sandbox,omitempty"`
	SandboxNetwork    string   `json:"sandbox_network,omitempty"`
	SandboxAllowWrite []string `json:"sandbox_allow_write,omitempty"`
	SandboxDenyRead   []string `json:"sandbox_deny_read,omitempty"`
	// SandboxRecover is --sandbox-recover (docs/sandbox.md#recovery): a
	// config key like sandbox; nil leaves it to the config.
	SandboxRecover *bool `json:"sandbox_recover,omitempty"`
	// Rate limits and quota windows (docs/unattended.md#rate-limits), as
	// avenor run's --wait-on-rate-limit, --max-rate-limit-resumes and
	// --report-usage.
	WaitOnRateLimit     *bool `json:"wait_on_rate_limit,omitempty"`
	MaxRateLimitResumes *int  `json:"max_rate_limit_resumes,omitempty"`
	ReportUsage         *bool `json:"report_usage,omitempty"`
	// Spend limits (docs/unattended.md#spend-limits), as avenor run's
	// --spend-*: spend_wall a duration as timeout takes it.
	SpendTokens *int64          `json:"spend_tokens,omitempty"`
	SpendUSD    *float64        `json:"spend_usd,omitempty"`
	SpendWall   json.RawMessage `json:"spend_wall,omitempty"`
	SpendScope  string          `json:"spend_scope,omitempty"`
	SpendPolicy string          `json:"spend_policy,omitempty"`
	// ContextWarnPct asks for context use (docs/unattended.md#context-use).
	ContextWarnPct *int `json:"context_warn_pct,omitempty"`
	// AutoCompactPct asks for a native compaction at the turn boundary
	// (docs/unattended.md#context-use).
	AutoCompactPct *int `json:"auto_compact_pct,omitempty"`
}

// Validate checks what needs no backend, in the order of avenor run's
// validation (docs/run.md#validation). A refused combination (or no prompt at all)
// is the spawn's own logic failing: a plain error, -32000 with its text
// (docs/control-protocol.md#errors). A value no spawn could take — a timeout that does not parse, a
// negative max_retries — is -32602, as params that do not decode are.
func (p *SpawnParams) Validate() error {
	src := Sources{Prompt: p.Prompt, PromptFile: p.PromptFile, LoopFile: p.LoopFile, TeamFile: p.TeamFile, Resume: p.SessionID}
	if err := src.Check(paramName); err != nil {
		return err
	}
	given := map[string]bool{"backend": p.Backend != "", "agent": p.Agent != "", "model": p.Model != ""}
	phased := p.LoopFile != "" || p.TeamFile != ""
	if _, err := CheckRoster(p.RosterFile, p.RosterEntry, phased, func(k string) bool { return given[k] }, paramName); err != nil {
		return err
	}
	if p.MaxRetries != nil && *p.MaxRetries < 0 {
		return control.InvalidParams(fmt.Sprintf("max_retries must not be negative, got %d", *p.MaxRetries))
	}
	if _, err := ParseTimeout(p.Timeout); err != nil {
		return control.InvalidParams(err.Error())
	}
	if err := p.validateWatchdog(); err != nil {
		return err
	}
	if err := p.validateRateLimit(); err != nil {
		return err
	}
	if err := p.validateSpend(); err != nil {
		return err
	}
	if h := p.PermissionHandler; h != "" && !strings.HasPrefix(h, "file:") {
		return control.InvalidParams("permission_handler supports file:<path> only")
	}
	if err := p.validateSandbox(); err != nil {
		return err
	}
	return p.validateLaunch()
}

// paramName is a spawn's name of a param of Sources.
func paramName(param string) string {
	if param == "resume" {
		return "session_id"
	}
	return param
}

// Request is what the spawn asks to run.
func (p SpawnParams) Request() SpawnRequest {
	return SpawnRequest{Prompt: p.Prompt, PromptFile: p.PromptFile, Images: p.Images, Dir: p.Dir, Settings: p.configKeys(),
		RosterFile: p.RosterFile, RosterEntry: p.RosterEntry, LoopFile: p.LoopFile, TeamFile: p.TeamFile,
		Sandbox: SandboxFlags{AllowWrite: p.SandboxAllowWrite, DenyRead: p.SandboxDenyRead}}
}

// configKeys are the params that are config settings, keyed as host/config
// keys, only those the spawn gave.
func (p SpawnParams) configKeys() map[string]any {
	out := map[string]any{}
	for key, v := range map[string]string{"backend": p.Backend, "model": p.Model, "agent": p.Agent,
		"thinking": p.Thinking, "dir": p.Dir, "server_url": p.ServerURL, "label": p.Label} {
		if v != "" {
			out[key] = v
		}
	}
	if d, _ := ParseTimeout(p.Timeout); d > 0 {
		out["timeout"] = d
	}
	if p.MaxRetries != nil {
		out["max_retries"] = *p.MaxRetries
	}
	if p.AutoApprove != nil {
		out["auto_approve"] = *p.AutoApprove
	}
	if p.Questions != nil {
		out["questions"] = *p.Questions
	}
	p.launchKeys(out)
	p.watchdogKeys(out)
	p.sandboxKeys(out)
	p.rateLimitKeys(out)
	p.spendKeys(out)
	return out
}

// The spawn params of the permission mode and launch context
// (docs/control-protocol.md#spawn): layered over the config as avenor
// run's flags are.

// validateLaunch refuses a permission_mode outside the vocabulary and an
// allowed_tools that is neither a list nor a comma string: -32602.
func (p *SpawnParams) validateLaunch() error {
	if _, err := sdk.ParsePermissionMode(p.PermissionMode); err != nil {
		return control.InvalidParams("permission_mode: " + err.Error())
	}
	if _, _, err := AllowedToolsParam(p.AllowedTools); err != nil {
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
	if tools, set, _ := AllowedToolsParam(p.AllowedTools); set {
		out["allowed_tools"] = tools
	}
}
