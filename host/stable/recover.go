package stable

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/avenor-go/avenor/host/control"
	hostrun "github.com/avenor-go/avenor/host/run"
	hostrt "github.com/avenor-go/avenor/host/runner"
)

// Recovering the runtimes of a supervisor that died on this socket
// (state.go): each comes back in the table under its id, its host/run
// runtime restored from its record (hostrun.Runtime.Recover: continued,
// re-attached, or ended in error).

// openState opens the durable state (Config.StateDir) and recovers what a
// dead predecessor left there. A state file it cannot trust is refused:
// the supervisor does not start, and nothing is stopped or started.
func (s *Supervisor) openState() error {
	if s.cfg.StateDir == "" {
		return nil
	}
	st, err := openStateStore(s.cfg.StateDir)
	if err != nil {
		return err
	}
	prev, ok, err := st.load()
	if err != nil {
		return err
	}
	s.store = st
	if ok {
		s.recoverState(prev)
	}
	return nil
}

// recoverState takes over the runtimes of prev.
func (s *Supervisor) recoverState(prev supervisorState) {
	s.log.Info("recovering the runtimes of a supervisor that died on this socket", "pid", prev.PID, "runtimes", len(prev.Runtimes))
	for _, r := range prev.Runtimes {
		rt, err := s.recoverRuntime(r)
		if err != nil {
			fmt.Fprintf(s.cfg.Stderr, "avenor stable: runtime %s of the previous supervisor could not be recovered: %v\n", r.ID, err)
			continue
		}
		s.mu.Lock()
		s.runtimes[rt.id] = rt
		s.nextN = max(s.nextN, rt.n)
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.nextN = max(s.nextN, prev.NextN)
	s.mu.Unlock()
}

// recoverRuntime rebuilds one runtime: its spawn resolved again, its
// runtime restored from its record.
func (s *Supervisor) recoverRuntime(r hostrun.Record) (*runtime, error) {
	var p SpawnParams
	if err := decodeSpawn(r.Spawn, &p); err != nil {
		return nil, err
	}
	rt := &runtime{s: s, id: r.ID, n: r.N, started: r.Started}
	rt.setParams(p)
	spec, dead := hostrun.RecordSpec(r, p.Request(), s.resolve, s.spawnOptions(r.ID, p))
	run, rec, err := hostrun.Recover(r, spec, dead, s.runDeps(rt))
	if err != nil {
		return nil, err
	}
	rt.run = run
	var stop []*hostrt.HeldSession
	s.mu.Lock()
	switch {
	case rec.Adopt:
		s.active++ // it runs already: admitted whatever the limits say now
		_ = s.tree.Reserve(rt.id, treeFull)
		rt.run.Go(hostrun.Turn{Prompt: p.Prompt, Resume: r.SessionID})
	case rec.Kept != nil:
		stop = s.keepLocked(rt, rec.Kept)
	}
	s.mu.Unlock()
	if rec.Adopt {
		rt.run.AnswerRecorded(r.Pending)
	}
	closeHeld(stop)
	return rt, nil
}

// decodeSpawn reads a record's spawn params strictly: a field this avenor
// does not know is a state file it cannot trust.
func decodeSpawn(raw json.RawMessage, p *SpawnParams) error {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(p)
}

// runDeps are what the supervisor gives a runtime of its: itself as the
// runtime's control plane and owner.
func (s *Supervisor) runDeps(rt *runtime) hostrun.Deps {
	return hostrun.Deps{Control: control.Resolver{Server: s.srv}, Owner: rt, Group: &s.group}
}
