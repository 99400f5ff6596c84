package client

import "context"

// SetBudgetParams are set_budget's params (docs/unattended.md#spend-limits):
// a limit left nil is unchanged; SpendWall as Timeout takes it. Resume
// continues a runtime that a limit paused with a new turn of its session.
type SetBudgetParams struct {
	RuntimeID   string   `json:"runtime_id"`
	SpendTokens *int64   `json:"spend_tokens,omitempty"`
	SpendUSD    *float64 `json:"spend_usd,omitempty"`
	SpendWall   any      `json:"spend_wall,omitempty"`
	Resume      bool     `json:"resume,omitempty"`
}

// SetBudgetResult is set_budget's answer: the runtime's spend (limits,
// spent, the limit reached) and whether a turn was started.
type SetBudgetResult struct {
	RuntimeID string         `json:"runtime_id"`
	Spend     map[string]any `json:"spend"`
	Resumed   bool           `json:"resumed"`
}

// SetBudget changes a runtime's spend limits (set_budget).
func (c *Client) SetBudget(ctx context.Context, p SetBudgetParams) (SetBudgetResult, error) {
	var res SetBudgetResult
	err := c.Call(ctx, "set_budget", p, &res)
	return res, err
}

// Int64 returns a pointer to n, for the optional int64 fields of params.
func Int64(n int64) *int64 { return &n }

// Float64 returns a pointer to f, for the optional number fields of params.
func Float64(f float64) *float64 { return &f }
