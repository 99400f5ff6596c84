package stable

import (
	"context"
	"os"

	"github.com/avenor-go/avenor/host/control"
	hostrun "github.com/avenor-go/avenor/host/run"
)

// inheritSpend makes a child runtime (parent_id) count its spending into
// the spend ledgers its parent counts into (spend_scope tree): a child
// spawned on the parent's own supervisor, through avenor mcp, gets the
// chain a nested supervisor gets through AVENOR_SPEND_LEDGER.
func (s *Supervisor) inheritSpend(parentID string, b *hostrun.SpawnBackend) {
	if parentID == "" {
		return
	}
	s.mu.Lock()
	parent := s.runtimes[parentID]
	s.mu.Unlock()
	if parent == nil {
		return
	}
	chain := parent.run.Spec().Options.Env[hostrun.EnvSpendLedger]
	if chain == "" || chain == b.Env[hostrun.EnvSpendLedger] {
		return
	}
	env := make(map[string]string, len(b.Env)+1)
	for k, v := range b.Env {
		env[k] = v
	}
	if own := env[hostrun.EnvSpendLedger]; own != "" {
		chain = own + string(os.PathListSeparator) + chain
	}
	env[hostrun.EnvSpendLedger] = chain
	b.Env = env
}

// setBudget is set_budget (docs/control-protocol.md#set_budget).
func (s *Supervisor) setBudget(ctx context.Context, c *control.Call) (any, error) {
	var p hostrun.SetBudgetParams
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	rt, err := s.lookup(p.RuntimeID)
	if err != nil {
		return nil, err
	}
	return rt.run.SetBudget(ctx, p)
}
