package stable

import hostrun "github.com/avenor-go/avenor/host/run"

// EnvTreeBudget names the inherited tree budget file (hostrun.TreeBudget).
const EnvTreeBudget = hostrun.EnvTreeBudget

// runtimeEnv is a runtime's plugin environment: env, and the tree budget
// file that a supervisor the runtime starts joins.
func (s *Supervisor) runtimeEnv(env map[string]string) map[string]string {
	out := make(map[string]string, len(env)+1)
	for k, v := range env {
		out[k] = v
	}
	if path := s.tree.Path(); path != "" {
		out[EnvTreeBudget] = path
	}
	return out
}
