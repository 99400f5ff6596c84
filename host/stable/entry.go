package stable

import (
	hostrun "github.com/avenor-go/avenor/host/run"
)

// Entry statuses (docs/control-protocol.md#list; host/run's).
const (
	StatusIdle    = hostrun.StatusIdle
	StatusRunning = hostrun.StatusRunning
	StatusEnded   = hostrun.StatusEnded
)

// Runtimes returns every runtime's entry, in id order (the list method).
func (s *Supervisor) Runtimes() []map[string]any {
	list, children := s.sorted()
	out := make([]map[string]any, 0, len(list))
	for _, rt := range list {
		out = append(out, rt.entry(children[rt.id]))
	}
	return out
}

// entry is the runtime's list / status entry (docs/control-protocol.md#list).
func (rt *runtime) entry(children []string) map[string]any {
	e := rt.run.Entry()
	rt.describe(e, children)
	return e
}

// Describe implements hostrun.Owner: the supervisor's fields of the
// runtime's entry.
func (rt *runtime) Describe(e map[string]any) {
	_, children := rt.s.sorted()
	rt.describe(e, children[rt.id])
}

func (rt *runtime) describe(e map[string]any, children []string) {
	if children == nil {
		children = []string{}
	}
	p := rt.params
	e["parent_id"], e["children"], e["started_at"] = p.ParentID, children, rt.started
	e["agent_profile"], e["parent_run_id"] = p.AgentProfile, p.ParentRunID
}
