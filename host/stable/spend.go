package stable

import hostrun "github.com/avenor-go/avenor/host/run"

// inheritSpend makes a child (parent_id) count into its parent's spend
// ledgers (hostrun.InheritSpend).
func (s *Supervisor) inheritSpend(parentID string, b *hostrun.SpawnBackend) {
	s.mu.Lock()
	parent := s.runtimes[parentID]
	s.mu.Unlock()
	if parent != nil {
		hostrun.InheritSpend(parent.run, b)
	}
}

// runOf is the runtime id names (set_budget's).
func (s *Supervisor) runOf(id string) (*hostrun.Runtime, error) {
	rt, err := s.lookup(id)
	if err != nil {
		return nil, err
	}
	return rt.run, nil
}
