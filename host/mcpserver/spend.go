package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/avenor-go/avenor/client"
)

// spendParams carries avenor_spawn's spend arguments to the spawn
// (docs/unattended.md#spend-limits); the supervisor checks them.
func (a spawnArgs) spendParams(p *client.SpawnParams) error {
	if err := a.SpendWall.into("spend_wall", &p.SpendWall); err != nil {
		return err
	}
	p.SpendTokens, p.SpendUSD, p.SpendScope, p.SpendPolicy = a.SpendTokens, a.SpendUSD, a.SpendScope, a.SpendPolicy
	p.ContextWarnPct, p.AutoCompactPct = a.ContextWarnPct, a.AutoCompactPct
	return nil
}

type setBudgetArgs struct {
	RunID        string     `json:"run_id" jsonschema:"run ID or label"`
	SpendTokens  *int64     `json:"spend_tokens,omitempty" jsonschema:"the new token limit; omitted: unchanged"`
	SpendUSD     *float64   `json:"spend_usd,omitempty" jsonschema:"the new cost limit in US dollars; omitted: unchanged"`
	SpendWall    timeoutArg `json:"spend_wall,omitempty" jsonschema:"the new limit of time in turns; omitted: unchanged"`
	Resume       bool       `json:"resume,omitempty" jsonschema:"continue the run a limit paused with a new turn of its session"`
	SupervisorID string     `json:"supervisor_id,omitempty" jsonschema:"supervisor socket path"`
}

type setBudgetResult struct {
	OK      bool           `json:"ok"`
	RunID   string         `json:"run_id"`
	Resumed bool           `json:"resumed"`
	Spend   map[string]any `json:"spend,omitempty"`
}

func (s *Server) setBudget(ctx context.Context, _ *mcp.CallToolRequest, a setBudgetArgs) (*mcp.CallToolResult, setBudgetResult, error) {
	var none setBudgetResult
	r, err := s.resolve(ctx, a.RunID, a.SupervisorID)
	if err != nil {
		return nil, none, err
	}
	p := client.SetBudgetParams{RuntimeID: r.rec.RuntimeID, SpendTokens: a.SpendTokens, SpendUSD: a.SpendUSD, Resume: a.Resume}
	if err := a.SpendWall.into("spend_wall", &p.SpendWall); err != nil {
		return nil, none, err
	}
	if !r.live() {
		return nil, none, fmt.Errorf("run %s is gone with its supervisor: its limits cannot be set", r.rec.RunID)
	}
	res, err := r.conn.c.SetBudget(ctx, p)
	if err != nil {
		return nil, none, fmt.Errorf("set budget of run %s: %w", r.rec.RunID, err)
	}
	return nil, setBudgetResult{OK: true, RunID: r.rec.RunID, Resumed: res.Resumed, Spend: res.Spend}, nil
}
