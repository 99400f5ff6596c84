package run

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/avenor-go/avenor/host/control"
	hostrt "github.com/avenor-go/avenor/host/runner"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// ContinuePrompt is the prompt of the turn set_budget's resume starts in
// a runtime that a spend limit paused (docs/unattended.md#spend-limits).
const ContinuePrompt = "The spend limit that paused you was raised. Continue the task where you stopped."

// SetBudgetParams are set_budget's params: the runtime, the limits to set
// (absent: unchanged; 0: none of that kind) and whether to continue the
// paused session with a new turn (ContinuePrompt).
type SetBudgetParams struct {
	RuntimeID   string          `json:"runtime_id"`
	SpendTokens *int64          `json:"spend_tokens,omitempty"`
	SpendUSD    *float64        `json:"spend_usd,omitempty"`
	SpendWall   json.RawMessage `json:"spend_wall,omitempty"`
	Resume      bool            `json:"resume,omitempty"`
}

// SetBudget changes the runtime's spend limits and, with Resume, continues
// a runtime that a limit paused with a new turn of the same session,
// whose end rewrites the sentinel as a follow-up's does. A limit may be
// lowered, below what was spent too: the runtime then stops at its next
// turn boundary. A runtime spawned without spend limits has none to set.
func (rt *Runtime) SetBudget(ctx context.Context, p SetBudgetParams) (map[string]any, error) {
	sp := rt.spec.Options.Spend
	if sp == nil || !sp.Limits().Any() {
		return nil, fmt.Errorf("runtime %s has no spend limits to set: spawn it with spend_tokens, spend_usd or spend_wall", rt.spec.RuntimeID)
	}
	var wall *time.Duration
	if len(p.SpendWall) > 0 {
		d, err := ParseTimeout(p.SpendWall)
		if err != nil {
			return nil, control.InvalidParams("spend_wall: " + err.Error())
		}
		wall = &d
	}
	next := sp.Limits()
	if p.SpendTokens != nil {
		next.Tokens = *p.SpendTokens
	}
	if p.SpendUSD != nil {
		next.USD = *p.SpendUSD
	}
	if wall != nil {
		next.Wall = *wall
	}
	if err := next.Validate(spawnParam); err != nil {
		return nil, control.InvalidParams(err.Error())
	}
	if !next.Any() {
		return nil, control.InvalidParams("set_budget would leave no limit: keep one (the runtime's limits cannot be removed, only raised or lowered)")
	}
	sp.SetLimits(p.SpendTokens, p.SpendUSD, wall)
	out := map[string]any{"runtime_id": rt.spec.RuntimeID, "spend": sp.Status(), "resumed": false}
	if !p.Resume {
		return out, nil
	}
	if limit := sp.Reached(); limit != "" {
		return nil, fmt.Errorf("runtime %s is still at its %s limit (%v): raise it to resume", rt.spec.RuntimeID, limit, sp.Status())
	}
	if rt.life == nil || rt.State() != Parked || !rt.pausedBySpend() {
		return nil, fmt.Errorf("runtime %s is not paused by a spend limit: the limits are set, nothing to resume", rt.spec.RuntimeID)
	}
	if err := rt.FollowUp(ctx, ContinuePrompt, false, false); err != nil {
		return nil, err
	}
	out["resumed"] = true
	return out, nil
}

// pausedBySpend says the runtime's last run ended at a spend limit.
func (rt *Runtime) pausedBySpend() bool {
	rt.life.mu.Lock()
	defer rt.life.mu.Unlock()
	r := rt.life.result
	return r != nil && r.StopReason == sdk.StopBudgetReached
}

// spendEntry adds the runtime's spend to its list / status entry.
func spendEntry(e map[string]any, sp *hostrt.Spend) {
	if sp != nil && sp.Limits().Any() {
		e["spend"] = sp.Status()
	}
}
