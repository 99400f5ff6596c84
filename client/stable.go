package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Runtime is a stable supervisor's runtime entry (docs/control-protocol.md#list): the list
// method's items and status {runtime_id}'s answer. Raw keeps the whole
// entry, including fields this version does not know.
type Runtime struct {
	RuntimeID            string          `json:"runtime_id"`
	SessionID            string          `json:"session_id"`
	RunID                string          `json:"run_id"`
	Label                string          `json:"label"`
	Agent                string          `json:"agent"`
	Model                string          `json:"model"`
	Backend              string          `json:"backend"`
	Dir                  string          `json:"dir"`
	Status               string          `json:"status"` // idle, running or ended
	Phase                string          `json:"phase"`
	PhaseLabel           string          `json:"phase_label"`
	ParentID             string          `json:"parent_id"`
	Children             []string        `json:"children"`
	LatestSeq            int64           `json:"latest_seq"`
	Usage                json.RawMessage `json:"usage"`
	ExitCode             *int            `json:"exit_code"` // nil while the runtime runs
	StopReason           sdk.StopReason  `json:"stop_reason"`
	OnEvent              string          `json:"on_event"`
	EventPath            string          `json:"event_path"`
	SentinelFile         string          `json:"sentinel_file"`
	FinalOutput          string          `json:"final_output"`
	FinalOutputTruncated bool            `json:"final_output_truncated"`
	PendingPermission    bool            `json:"pending_permission"`
	Permission           json.RawMessage `json:"permission"`
	StartedAt            int64           `json:"started_at"`
	// Parked: the run ended and the runtime waits for follow-up prompts.
	Parked bool `json:"parked"`
	// PID is the runtime process, PluginPID its plugin's; 0 when none.
	PID       int `json:"pid"`
	PluginPID int `json:"plugin_pid"`
	// Watchdog is the last firing of the run's turn watchdog
	// (docs/unattended.md): kind, tool, at, action, idle_for_ms, count;
	// nil when it never fired.
	Watchdog json.RawMessage `json:"watchdog,omitempty"`
	// WaitingReason is "rate_limit" while the running turn waits for a rate
	// limit's reset, RateLimitedUntil (RFC 3339) its end; empty otherwise.
	WaitingReason    string `json:"waiting_reason,omitempty"`
	RateLimitedUntil string `json:"rate_limited_until,omitempty"`
	// Spend is the runtime's spend limits and what it spent
	// (docs/unattended.md#spend-limits); nil without limits.
	Spend json.RawMessage `json:"spend,omitempty"`
	Raw   json.RawMessage `json:"-"`
}

// SpawnParams are spawn's params (docs/control-protocol.md#spawn); empty fields are not
// sent. Timeout is a number of seconds or a Go duration string ("10m").
type SpawnParams struct {
	Prompt     string `json:"prompt,omitempty"`
	PromptFile string `json:"prompt_file,omitempty"`
	// Images are image files sent with the prompt, to a backend that
	// takes images (docs/run.md#images).
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
	// AutoApprove nil leaves the supervisor's config to decide; a pointer
	// to false sends auto_approve:false, which overrides a config saying
	// true (client.Bool(false)).
	AutoApprove *bool `json:"auto_approve,omitempty"`
	// Questions relays the runtime's own questions (question.request); nil
	// leaves the supervisor's config to decide.
	Questions *bool `json:"questions,omitempty"`
	Timeout   any   `json:"timeout,omitempty"`
	// MaxRetries nil leaves the supervisor's config to decide; a pointer
	// to 0 sends max_retries:0, which overrides a config that sets retries
	// (client.Int(0)).
	MaxRetries *int `json:"max_retries,omitempty"`
	// LoopFile or TeamFile runs a whole loop or team as one runtime;
	// relative paths (RosterFile's too) are resolved against Dir.
	LoopFile       string `json:"loop_file,omitempty"`
	TeamFile       string `json:"team_file,omitempty"`
	RosterFile     string `json:"roster_file,omitempty"`
	RosterEntry    string `json:"roster_entry,omitempty"`
	SessionID      string `json:"session_id,omitempty"`
	ParentID       string `json:"parent_id,omitempty"`
	ParentRunID    string `json:"parent_run_id,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// PermissionMode (default, accept-edits, plan, full-access),
	// AppendSystemPrompt (text, or @FILE), AllowedTools (a []string or a
	// comma string; an empty one allows no tool; nil keeps the runtime's
	// defaults) and MCPConfig (a file) are the runtime's permission mode
	// and launch context (docs/permission-handler.md).
	PermissionMode     string `json:"permission_mode,omitempty"`
	AppendSystemPrompt string `json:"append_system_prompt,omitempty"`
	AllowedTools       any    `json:"allowed_tools,omitempty"`
	MCPConfig          string `json:"mcp_config,omitempty"`

	// The turn watchdog (docs/unattended.md): durations as Timeout takes
	// them; WatchdogRestarts nil leaves the supervisor's config to decide.
	ProgressTimeout  any    `json:"progress_timeout,omitempty"`
	ToolTimeout      any    `json:"tool_timeout,omitempty"`
	Watchdog         string `json:"watchdog,omitempty"`
	WatchdogRestarts *int   `json:"watchdog_restarts,omitempty"`

	// The sandbox (docs/sandbox.md): Sandbox (off, workspace, read-only)
	// and SandboxNetwork (host, none, model, allow=…) are the supervisor's config keys'
	// when empty; SandboxAllowWrite and SandboxDenyRead are paths
	// (WithAbsPaths makes them absolute).
	Sandbox           string   `json:"sandbox,omitempty"`
	SandboxNetwork    string   `json:"sandbox_network,omitempty"`
	SandboxAllowWrite []string `json:"sandbox_allow_write,omitempty"`
	SandboxDenyRead   []string `json:"sandbox_deny_read,omitempty"`
	// SandboxRecover asks a person to widen the sandbox after a denial
	// (docs/sandbox.md#recovery); nil leaves the supervisor's config to
	// decide.
	SandboxRecover *bool `json:"sandbox_recover,omitempty"`
	// Rate limits and quota windows (docs/unattended.md#rate-limits); nil
	// leaves the supervisor's config to decide.
	WaitOnRateLimit     *bool `json:"wait_on_rate_limit,omitempty"`
	MaxRateLimitResumes *int  `json:"max_rate_limit_resumes,omitempty"`
	ReportUsage         *bool `json:"report_usage,omitempty"`
	// Spend limits (docs/unattended.md#spend-limits): SpendWall as
	// Timeout takes it; SpendScope runtime|tree, SpendPolicy
	// finish|interrupt. ContextWarnPct asks for context use.
	SpendTokens    *int64   `json:"spend_tokens,omitempty"`
	SpendUSD       *float64 `json:"spend_usd,omitempty"`
	SpendWall      any      `json:"spend_wall,omitempty"`
	SpendScope     string   `json:"spend_scope,omitempty"`
	SpendPolicy    string   `json:"spend_policy,omitempty"`
	ContextWarnPct *int     `json:"context_warn_pct,omitempty"`
	// AutoCompactPct asks for a native compaction at the turn boundary
	// once the context window is this full (docs/unattended.md#context-use).
	AutoCompactPct *int `json:"auto_compact_pct,omitempty"`
}

// WithAbsPaths returns p with its paths — prompt_file, dir, on_event,
// sentinel_file, roster_file, loop_file, team_file, mcp_config, the base
// of a file:<base> permission_handler, the file of an @FILE
// append_system_prompt and the sandbox's paths — made absolute against this process's
// working directory: the supervisor's working directory is not the
// caller's.
func (p SpawnParams) WithAbsPaths() (SpawnParams, error) {
	for _, f := range []struct {
		key string
		v   *string
	}{
		{"prompt_file", &p.PromptFile}, {"dir", &p.Dir}, {"on_event", &p.OnEvent}, {"sentinel_file", &p.SentinelFile},
		{"roster_file", &p.RosterFile}, {"loop_file", &p.LoopFile}, {"team_file", &p.TeamFile},
		{"mcp_config", &p.MCPConfig},
	} {
		if *f.v == "" {
			continue
		}
		abs, err := filepath.Abs(*f.v)
		if err != nil {
			return p, fmt.Errorf("%s %q: %w", f.key, *f.v, err)
		}
		*f.v = abs
	}
	if base, ok := strings.CutPrefix(p.PermissionHandler, "file:"); ok && base != "" {
		abs, err := filepath.Abs(base)
		if err != nil {
			return p, fmt.Errorf("permission_handler %q: %w", p.PermissionHandler, err)
		}
		p.PermissionHandler = "file:" + abs
	}
	if file, ok := strings.CutPrefix(p.AppendSystemPrompt, "@"); ok && file != "" {
		abs, err := filepath.Abs(file)
		if err != nil {
			return p, fmt.Errorf("append_system_prompt %q: %w", p.AppendSystemPrompt, err)
		}
		p.AppendSystemPrompt = "@" + abs
	}
	for _, l := range []struct {
		key   string
		paths *[]string
	}{{"sandbox_allow_write", &p.SandboxAllowWrite}, {"sandbox_deny_read", &p.SandboxDenyRead}} {
		if len(*l.paths) == 0 {
			continue
		}
		abs := make([]string, len(*l.paths))
		for i, v := range *l.paths {
			a, err := filepath.Abs(v)
			if err != nil {
				return p, fmt.Errorf("%s %q: %w", l.key, v, err)
			}
			abs[i] = a
		}
		*l.paths = abs
	}
	return p, nil
}

// Bool returns a pointer to b, for the optional booleans of SpawnParams.
func Bool(b bool) *bool { return &b }

// Int returns a pointer to n, for the optional numbers of SpawnParams.
func Int(n int) *int { return &n }

// Spawned is spawn's result. Raw keeps the whole answer.
type Spawned struct {
	RuntimeID        string          `json:"runtime_id"`
	SessionID        string          `json:"session_id"`
	RunID            string          `json:"run_id"`
	OnEvent          string          `json:"on_event"`
	SentinelFile     string          `json:"sentinel_file"`
	EffectiveBackend string          `json:"effective_backend"`
	Raw              json.RawMessage `json:"-"`
}

// Capacity is the typed, retryable capacity error of a full supervisor or
// tree (docs/stable.md#limits): the error.data of the refused spawn or prompt.
type Capacity struct {
	Source    string `json:"source"` // "local" (--max-runtimes) or "tree"
	Retryable bool   `json:"retryable"`
	Limit     int    `json:"limit"`
	Active    int    `json:"active"`
}

// AsCapacity reports whether err is a capacity error, and its data.
func AsCapacity(err error) (Capacity, bool) {
	var re *RPCError
	if !errors.As(err, &re) || len(re.Data) == 0 {
		return Capacity{}, false
	}
	var c Capacity
	if json.Unmarshal(re.Data, &c) != nil || c.Source == "" || !c.Retryable {
		return Capacity{}, false
	}
	return c, true
}

// Spawn starts a runtime in a stable supervisor; it returns once the
// runtime's session is open. Spawning is a mutating call (ownership).
func (c *Client) Spawn(ctx context.Context, p SpawnParams) (Spawned, error) {
	var raw json.RawMessage
	if err := c.Call(ctx, "spawn", p, &raw); err != nil {
		return Spawned{}, err
	}
	var s Spawned
	if err := json.Unmarshal(raw, &s); err != nil {
		return Spawned{}, err
	}
	s.Raw = raw
	return s, nil
}

// List returns a stable supervisor's runtimes, in id order.
func (c *Client) List(ctx context.Context) ([]Runtime, error) {
	var raws []json.RawMessage
	if err := c.Call(ctx, "list", nil, &raws); err != nil {
		return nil, err
	}
	out := make([]Runtime, 0, len(raws))
	for _, raw := range raws {
		var r Runtime
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, err
		}
		r.Raw = raw
		out = append(out, r)
	}
	return out, nil
}

// Runtime returns one runtime's entry (status {runtime_id}).
func (c *Client) Runtime(ctx context.Context, runtimeID string) (Runtime, error) {
	var raw json.RawMessage
	if err := c.Call(ctx, "status", map[string]any{"runtime_id": runtimeID}, &raw); err != nil {
		return Runtime{}, err
	}
	var r Runtime
	if err := json.Unmarshal(raw, &r); err != nil {
		return Runtime{}, err
	}
	r.Raw = raw
	return r, nil
}

// Shutdown stops the supervisor: mode "graceful" (the default when empty)
// cancels the runtimes and waits for them; "kill" and "immediate" kill
// their plugins at once.
func (c *Client) Shutdown(ctx context.Context, mode string) error {
	if mode == "" {
		mode = "graceful"
	}
	return c.Call(ctx, "shutdown", map[string]any{"mode": mode}, nil)
}

// TreeBudget is tree_budget's answer.
type TreeBudget struct {
	Active   int    `json:"active"`
	Capacity int    `json:"capacity"`
	RootID   string `json:"root_id"`
	Mode     string `json:"mode"` // "active" or "degraded"
	Reason   string `json:"reason,omitempty"`
	// Path is the budget file (AVENOR_TREE_BUDGET of nested supervisors).
	Path string `json:"path,omitempty"`
}

// TreeBudget returns the supervisor's tree budget.
func (c *Client) TreeBudget(ctx context.Context) (TreeBudget, error) {
	var tb TreeBudget
	err := c.Call(ctx, "tree_budget", nil, &tb)
	return tb, err
}

// SendToParent asks the parent of runtimeID a question: the parent's stream
// gets a child.question event. It returns the question's request id.
func (c *Client) SendToParent(ctx context.Context, runtimeID, message string) (string, error) {
	var res struct {
		RequestID string `json:"request_id"`
	}
	err := c.Call(ctx, "send_to_parent", map[string]any{"runtime_id": runtimeID, "message": message}, &res)
	return res.RequestID, err
}

// CapacityState is wait_for_capacity's answer: whether a spawn would be
// admitted now (Available) or the wait's timeout passed first (TimedOut),
// with the local slots (--max-runtimes) and the tree budget's.
type CapacityState struct {
	Available    bool   `json:"available"`
	TimedOut     bool   `json:"timed_out"`
	Active       int    `json:"active"`
	Capacity     int    `json:"capacity"`
	TreeActive   int    `json:"tree_active"`
	TreeCapacity int    `json:"tree_capacity"`
	TreeMode     string `json:"tree_mode"` // "active" or "degraded"
	// Waited is how long the supervisor waited, in milliseconds.
	Waited int64           `json:"waited_ms"`
	Raw    json.RawMessage `json:"-"`
}

// WaitForCapacity waits until a spawn in the stable supervisor would be
// admitted or timeout passes: a number of seconds, a Go duration string
// ("30s"), or nil for the supervisor's longest wait. A timed out wait is
// not an error: TimedOut says so. ctx must outlive timeout.
func (c *Client) WaitForCapacity(ctx context.Context, timeout any) (CapacityState, error) {
	p := map[string]any{}
	if timeout != nil {
		p["timeout"] = timeout
	}
	var raw json.RawMessage
	if err := c.Call(ctx, "wait_for_capacity", p, &raw); err != nil {
		return CapacityState{}, err
	}
	var st CapacityState
	if err := json.Unmarshal(raw, &st); err != nil {
		return CapacityState{}, err
	}
	st.Raw = raw
	return st, nil
}
