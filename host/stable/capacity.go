package stable

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/avenor-go/avenor/host/control"
	hostrun "github.com/avenor-go/avenor/host/run"
)

// MaxCapacityWait bounds one wait_for_capacity call: its longest timeout,
// and its wait when the call names none. A harness that wants to wait
// longer calls again; a bound keeps a forgotten call from holding a
// goroutine and a connection for ever.
const MaxCapacityWait = 10 * time.Minute

type capacityParams struct {
	// Timeout is a JSON number of seconds or a Go duration string, as
	// spawn's (docs/control-protocol.md#spawn); absent or null waits MaxCapacityWait.
	Timeout json.RawMessage `json:"timeout"`
}

// waitForCapacity is the wait_for_capacity method (docs/control-protocol.md#methods).
func (s *Supervisor) waitForCapacity(ctx context.Context, c *control.Call) (any, error) {
	var p capacityParams
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	wait := MaxCapacityWait
	if raw := bytes.TrimSpace(p.Timeout); len(raw) > 0 && string(raw) != "null" {
		d, err := hostrun.ParseTimeout(raw)
		if err != nil {
			return nil, control.InvalidParams(err.Error())
		}
		if d > MaxCapacityWait {
			return nil, control.InvalidParams(fmt.Sprintf("timeout %s is over %v, the longest wait (stable.MaxCapacityWait); call again to wait longer", raw, MaxCapacityWait))
		}
		wait = d
	}
	return s.WaitForCapacity(ctx, wait)
}

// capacity is what admission sees now: the local slots, the tree's, and
// which one (if any) would refuse a spawn.
type capacity struct {
	active, limit         int
	treeActive, treeLimit int
	treeMode              string
	blocked               string // "", SourceLocal or SourceTree
}

// capacityLocked reads the capacity as admitLocked would judge it (local
// limit first, then the tree budget) without taking a slot; s.mu is held.
func (s *Supervisor) capacityLocked() capacity {
	c := capacity{active: s.active, limit: s.cfg.MaxRuntimes}
	info := s.tree.Info(s.active, s.cfg.MaxRuntimes)
	c.treeActive, _ = info["active"].(int)
	c.treeLimit, _ = info["capacity"].(int)
	c.treeMode, _ = info["mode"].(string)
	switch {
	case c.active >= c.limit:
		c.blocked = SourceLocal
	case c.treeMode == hostrun.BudgetActive && c.treeActive >= c.treeLimit:
		c.blocked = SourceTree
	}
	return c
}

// WaitForCapacity waits until a spawn would be admitted — a free slot under
// --max-runtimes and in the tree budget — or wait passes, and answers
// {"available","timed_out","active","capacity","tree_active",
// "tree_capacity","tree_mode","waited_ms"} plus "source" ("local" or
// "tree": the limit still full) when not available. It wakes when this
// supervisor gives a slot back; while only the tree budget is full it also
// looks again every PhaseSlotRetry, since other supervisors of the tree
// free slots without telling this one. It takes no slot: a spawn after it
// may still lose the slot to another caller. A stopping supervisor answers
// ErrShuttingDown.
func (s *Supervisor) WaitForCapacity(ctx context.Context, wait time.Duration) (map[string]any, error) {
	start := time.Now()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	timedOut := false
	for {
		s.mu.Lock()
		if s.stoppingLocked() {
			s.mu.Unlock()
			return nil, ErrShuttingDown
		}
		c := s.capacityLocked()
		freed := s.slotWaitLocked()
		s.mu.Unlock()
		if c.blocked == "" || timedOut {
			return c.answer(timedOut && c.blocked != "", time.Since(start)), nil
		}
		var retry <-chan time.Time
		var t *time.Timer
		if c.blocked == SourceTree {
			t = time.NewTimer(PhaseSlotRetry)
			retry = t.C
		}
		select {
		case <-freed:
		case <-retry:
		case <-deadline.C:
			timedOut = true // one last look, then answer
		case <-s.stopCh:
		case <-ctx.Done():
			if t != nil {
				t.Stop()
			}
			return nil, ctx.Err()
		}
		if t != nil {
			t.Stop()
		}
	}
}

func (c capacity) answer(timedOut bool, waited time.Duration) map[string]any {
	out := map[string]any{
		"available": c.blocked == "", "timed_out": timedOut,
		"active": c.active, "capacity": c.limit,
		"tree_active": c.treeActive, "tree_capacity": c.treeLimit, "tree_mode": c.treeMode,
		"waited_ms": waited.Milliseconds(),
	}
	if c.blocked != "" {
		out["source"] = c.blocked
	}
	return out
}
