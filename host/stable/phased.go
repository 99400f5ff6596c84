package stable

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/avenor-go/avenor/host/loop"
	"github.com/avenor-go/avenor/host/plugins"
	hostrun "github.com/avenor-go/avenor/host/run"
	hostrt "github.com/avenor-go/avenor/host/runner"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// PhaseSlotRetry is how often a loop or team phase waiting for an executing
// slot looks again when none was given back in this supervisor: other
// supervisors of its tree free tree budget without telling it.
const PhaseSlotRetry = 250 * time.Millisecond

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

// phaseBackend is the phases' Runtimes.Backend: the phased run's backend,
// whose plugin the runtime's entry names.
func (rt *runtime) phaseBackend(name string) (loop.Backend, error) {
	b, err := rt.spec.Phased.Backend(name)
	if err != nil {
		return b, err
	}
	launch := b.Launch
	b.Launch = func(ctx context.Context) (*plugins.Launched, error) {
		l, err := launch(ctx)
		if err != nil {
			return nil, err
		}
		rt.mu.Lock()
		rt.plugin = l.Client.Info().Name
		rt.mu.Unlock()
		return l, nil
	}
	return b, nil
}

// startPhasedLocked starts the runtime's loop or team run with the
// initial prompt ("" for none); the executing slot is taken and s.mu and
// rt.mu are held. Spawn answers at once: session_id is "" (every phase has
// a session of its own).
func (rt *runtime) startPhasedLocked(initial string) {
	s := rt.s
	sp := rt.spec
	ctx, cancel := context.WithCancelCause(s.runCtx)
	run := rt.run.BeginPhased(hostrun.PhasedRun{
		Base: hostrt.Options{
			Dir: sp.Options.Dir, DirExplicit: sp.Options.DirExplicit, ServerURL: sp.Options.ServerURL, RunID: sp.Options.RunID, Label: sp.Options.Label,
			ProgressTimeout: sp.Options.ProgressTimeout, MaxRetries: sp.Options.MaxRetries, AutoApprove: sp.Options.AutoApprove,
			PermBase: sp.Options.PermBase, Logger: s.log.Named(rt.id), Stderr: s.cfg.Stderr, Now: s.cfg.Now,
		},
		Initial: initial, Backend: rt.phaseBackend, Admit: rt.admitted, CancelRun: rt.cancel,
	})
	rt.goLocked(cancel, func() hostrt.Result {
		res := run(ctx)
		return hostrt.Result{ExitCode: res.ExitCode, StopReason: res.StopReason}
	})
	rt.markReady()
}

// admitted makes every phase of the runtime's loop or team hold an
// executing slot while it runs: each phase is a plugin and a session, a
// runtime as --max-runtimes and the tree budget count them. A team used to
// start every member at once (120 members: 120 plugins under
// --max-runtimes 2); its members now run as many at a time as the limits
// allow, the rest waiting for a slot, and the team still runs them all.
func (rt *runtime) admitted(run loop.PhaseFunc) loop.PhaseFunc {
	return func(ctx context.Context, spec loop.Spec) loop.Outcome {
		release, err := rt.phaseSlot(ctx)
		if err != nil {
			reason := sdk.StopCancelled
			if errors.Is(context.Cause(ctx), hostrt.ErrTimeout) {
				reason = sdk.StopTimeout
			}
			return loop.Outcome{StopReason: reason}
		}
		defer release()
		return run(ctx, spec)
	}
}

// phaseSlot takes an executing slot for one phase: the runtime's own,
// admitted at spawn, when no other phase of it holds it; else one of its
// own, admitted as a spawn is (--max-runtimes, then the tree budget). It
// waits while neither is free. The own slot keeps a team going whatever
// else runs: a team never waits on slots that only it could free.
func (rt *runtime) phaseSlot(ctx context.Context) (release func(), err error) {
	s := rt.s
	for {
		s.mu.Lock()
		if !rt.ownSlotBusy {
			rt.ownSlotBusy = true
			s.mu.Unlock()
			return func() {
				s.mu.Lock()
				rt.ownSlotBusy = false
				s.slotFreedLocked()
				s.mu.Unlock()
			}, nil
		}
		rt.phaseSlots++
		id := rt.id + "." + strconv.Itoa(rt.phaseSlots)
		if err := s.admitLocked(id); err == nil {
			s.mu.Unlock()
			return func() {
				s.mu.Lock()
				s.releaseLocked(id)
				s.mu.Unlock()
			}, nil
		}
		freed := s.slotWaitLocked()
		s.mu.Unlock()
		t := time.NewTimer(PhaseSlotRetry)
		select {
		case <-freed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		t.Stop()
	}
}
