package stable

import (
	"fmt"
	"path/filepath"

	"github.com/avenor-go/avenor/host/loop"
	hostrun "github.com/avenor-go/avenor/host/run"
	hostrt "github.com/avenor-go/avenor/host/runner"
)

// phasedRun is what a loop_file / team_file runtime runs (docs/control-protocol.md#spawn),
// loaded by host/run as `avenor run --loop-file` loads it: the whole loop
// or team is the runtime's one run, every phase a host/runner run of its
// own writing into the runtime's stream.
type phasedRun = hostrun.Phased

// relTo resolves a spawn's path against its dir.
func relTo(dir, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

// spawnRoster loads the spawn's roster_file (nil without one).
func spawnRoster(p SpawnParams, dir string) (*loop.Roster, error) {
	if p.RosterFile == "" {
		return nil, nil
	}
	r, err := loop.LoadRoster(relTo(dir, p.RosterFile))
	if err != nil {
		return nil, fmt.Errorf("roster_file %s: %w", p.RosterFile, err)
	}
	return r, nil
}

// rosterEntry is the roster entry of a direct-mode spawn.
func rosterEntry(r *loop.Roster, name string) (loop.RosterEntry, error) {
	e, err := r.Lookup(name)
	if err != nil {
		return e, fmt.Errorf("roster_entry: %w", err)
	}
	return e, nil
}

// loadPhased loads the spawn's loop or team config (roster as the
// fallback roster of its phases) and resolves every backend its phases name
// before anything runs; b is the run-level backend, already resolved.
func (s *Supervisor) loadPhased(p SpawnParams, dir string, roster *loop.Roster, b Backend) (*phasedRun, error) {
	set := b.Settings
	id := loop.Identity{Backend: set.Backend, Agent: set.Agent, Model: set.Model, Thinking: set.Thinking}
	files := hostrun.PhasedFiles{LoopFile: p.LoopFile, TeamFile: p.TeamFile, Dir: dir, Roster: roster}
	return hostrun.LoadPhased(files, id, func(name string) (hostrt.Backend, error) {
		nb := b
		if name != set.Backend {
			var err error
			if nb, err = s.cfg.Resolve(dir, map[string]any{"backend": name}); err != nil {
				return hostrt.Backend{}, err
			}
		}
		lb := nb.Backend
		lb.Env = s.runtimeEnv(nb.Env)
		return lb, nil
	})
}
