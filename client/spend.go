package client

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
)

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

// setBudgetParams are set-budget's params: the runtime, then tokens=N,
// usd=X, wall=D (seconds or a Go duration) and resume, in any order.
func setBudgetParams(args []string) (map[string]any, error) {
	p := map[string]any{"runtime_id": args[0]}
	for _, a := range args[1:] {
		if a == "resume" {
			p["resume"] = true
			continue
		}
		k, v, ok := strings.Cut(a, "=")
		switch {
		case !ok:
			return nil, fmt.Errorf("set-budget: %q is not tokens=N, usd=X, wall=D or resume", a)
		case k == "tokens":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("set-budget: tokens=%s is not a non-negative whole number", v)
			}
			p["spend_tokens"] = n
		case k == "usd":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
				return nil, fmt.Errorf("set-budget: usd=%s is not a non-negative number", v)
			}
			p["spend_usd"] = f
		case k == "wall":
			p["spend_wall"] = v
		default:
			return nil, fmt.Errorf("set-budget: unknown limit %q (tokens, usd or wall)", k)
		}
	}
	return p, nil
}
