package stable

import (
	"github.com/avenor-go/avenor/host/event"
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

// Runtime returns one runtime's entry (status {runtime_id}); an unknown id
// is an error wrapping ErrUnknownRuntime.
func (s *Supervisor) Runtime(id string) (map[string]any, error) {
	rt, err := s.lookup(id)
	if err != nil {
		return nil, err
	}
	_, children := s.sorted()
	return rt.entry(children[rt.id]), nil
}

// Events returns a runtime's event writer: its history and subscriptions.
func (s *Supervisor) Events(id string) (*event.Writer, error) {
	rt, err := s.lookup(id)
	if err != nil {
		return nil, err
	}
	return rt.run.Events(), nil
}

// Cancel cancels a runtime's running run (stop reason cancelled); a parked
// runtime has nothing to cancel.
func (s *Supervisor) Cancel(id string) error {
	rt, err := s.lookup(id)
	if err != nil {
		return err
	}
	rt.run.Cancel()
	return nil
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
