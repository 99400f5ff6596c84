package client

import (
	"context"
	"encoding/json"
	"errors"
)

// Runtime is a stable supervisor's runtime entry (contract §5.6): the list
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
	StopReason           string          `json:"stop_reason"`
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
	PID       int             `json:"pid"`
	PluginPID int             `json:"plugin_pid"`
	Raw       json.RawMessage `json:"-"`
}

// SpawnParams are spawn's params (contract §5.6); empty fields are not
// sent. Timeout is a number of seconds or a Go duration string ("10m").
type SpawnParams struct {
	Prompt            string `json:"prompt,omitempty"`
	PromptFile        string `json:"prompt_file,omitempty"`
	Dir               string `json:"dir,omitempty"`
	Agent             string `json:"agent,omitempty"`
	AgentProfile      string `json:"agent_profile,omitempty"`
	Label             string `json:"label,omitempty"`
	Model             string `json:"model,omitempty"`
	Thinking          string `json:"thinking,omitempty"`
	ServerURL         string `json:"server_url,omitempty"`
	Backend           string `json:"backend,omitempty"`
	OnEvent           string `json:"on_event,omitempty"`
	SentinelFile      string `json:"sentinel_file,omitempty"`
	PermissionHandler string `json:"permission_handler,omitempty"`
	AutoApprove       bool   `json:"auto_approve,omitempty"`
	Timeout           any    `json:"timeout,omitempty"`
	MaxRetries        int    `json:"max_retries,omitempty"`
	SessionID         string `json:"session_id,omitempty"`
	ParentID          string `json:"parent_id,omitempty"`
	ParentRunID       string `json:"parent_run_id,omitempty"`
	IdempotencyKey    string `json:"idempotency_key,omitempty"`
}

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
// tree (contract §8): the error.data of the refused spawn or prompt.
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
