package stable

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/loop"
	"github.com/avenor-go/avenor/host/plugins"
	hostrt "github.com/avenor-go/avenor/host/runtime"
)

// workflow is what a loop_file / team_file runtime runs (contract §6.8):
// the whole loop or team is the runtime's one run, every phase a
// host/runtime run of its own writing into the runtime's stream.
type workflow struct {
	kind, file string // "loop" or "team", as the spawn gave it
	loop       *loop.LoopConfig
	team       *loop.TeamConfig
	identity   loop.Identity
	backends   map[string]loop.Backend
}

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
		return nil, control.InvalidParams(fmt.Sprintf("roster_file %s: %v", p.RosterFile, err))
	}
	return r, nil
}

// rosterEntry is the roster entry of a direct-mode spawn.
func rosterEntry(r *loop.Roster, name string) (loop.RosterEntry, error) {
	e, err := r.Lookup(name)
	if err != nil {
		return e, control.InvalidParams(fmt.Sprintf("roster_entry: %v", err))
	}
	return e, nil
}

// loadWorkflow loads the spawn's loop or team config (roster as the
// fallback roster of its phases) and resolves every backend its phases name
// before anything runs; b is the run-level backend, already resolved.
func (s *Supervisor) loadWorkflow(p SpawnParams, dir string, roster *loop.Roster, b Backend) (*workflow, error) {
	set := b.Settings
	wf := &workflow{kind: "loop", file: p.LoopFile, backends: map[string]loop.Backend{},
		identity: loop.Identity{Backend: set.Backend, Agent: set.Agent, Model: set.Model, Thinking: set.Thinking}}
	if p.TeamFile != "" {
		wf.kind, wf.file = "team", p.TeamFile
	}
	lo := loop.LoadOptions{Roster: roster}
	var names []string
	var err error
	if wf.kind == "loop" {
		if wf.loop, err = loop.LoadLoop(relTo(dir, wf.file), lo); err == nil {
			names = wf.loop.Backends(wf.identity)
		}
	} else {
		if wf.team, err = loop.LoadTeam(relTo(dir, wf.file), lo); err == nil {
			names = wf.team.Backends(wf.identity)
		}
	}
	if err != nil {
		return nil, control.InvalidParams(fmt.Sprintf("load %s config: %v", wf.kind, err))
	}
	for _, name := range names {
		nb := b
		if name != set.Backend {
			if nb, err = s.cfg.Resolve(dir, map[string]any{"backend": name}); err != nil {
				return nil, err
			}
		}
		env := make(map[string]string, len(nb.Env)+1)
		for k, v := range nb.Env {
			env[k] = v
		}
		if path := s.tree.Path(); path != "" {
			env[EnvTreeBudget] = path
		}
		wf.backends[name] = loop.Backend{Launch: nb.Launch, Env: env, PluginOptions: nb.PluginOptions, StateDir: nb.StateDir}
	}
	return wf, nil
}

// backend is the phases' Runtimes.Backend.
func (wf *workflow) backend(name string) (loop.Backend, error) {
	b, ok := wf.backends[name]
	if !ok {
		return b, fmt.Errorf("unknown backend %q", name)
	}
	return b, nil
}

// phaseBackend is the phases' Runtimes.Backend: the workflow's backend,
// whose plugins the runtime tracks while they run, so that a kill shutdown
// can SIGKILL them.
func (rt *runtime) phaseBackend(name string) (loop.Backend, error) {
	b, err := rt.wf.backend(name)
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
		if rt.phasePlugins == nil {
			rt.phasePlugins = map[*plugins.Launched]struct{}{}
		}
		rt.phasePlugins[l] = struct{}{}
		rt.plugin = l.Client.Info().Name
		rt.mu.Unlock()
		go func() {
			<-l.Client.Exited()
			rt.mu.Lock()
			delete(rt.phasePlugins, l)
			rt.mu.Unlock()
		}()
		return l, nil
	}
	return b, nil
}

// startWorkflowLocked starts the runtime's loop or team run with the
// initial prompt ("" for none); the executing slot is taken and s.mu and
// rt.mu are held. Spawn answers at once: session_id is "" (every phase has
// a session of its own).
func (rt *runtime) startWorkflowLocked(initial string) {
	s := rt.s
	sp := rt.spec
	wf := rt.wf
	ctx, cancel := context.WithCancelCause(s.runCtx)
	rts := &loop.Runtimes{
		Base: hostrt.Options{
			Dir: sp.dir, DirExplicit: sp.dirExplicit, ServerURL: sp.serverURL, RunID: sp.runID, Label: sp.label,
			ProgressTimeout: sp.progressTimeout, MaxRetries: sp.maxRetries, AutoApprove: sp.autoApprove,
			Writer: rt.w, PermBase: sp.permBase, Logger: s.log.Named(rt.id), Stderr: s.cfg.Stderr, Now: s.cfg.Now,
		},
		Backend: rt.phaseBackend, Permissions: hostrt.BrokerPermissions(rt.broker),
		SerialPermissions: sp.permFile, CancelRun: rt.cancel,
	}
	done := make(chan struct{})
	rt.runner, rt.cancelRun, rt.runDone, rt.state = rts, cancel, done, stateRunning
	rt.runs++
	s.runs.Add(1)
	opts := loop.Options{
		RunID: sp.runID, Dir: sp.dir, Writer: rt.w, SentinelPath: sp.sentinel, Timeout: sp.timeout,
		Initial: initial, Identity: wf.identity, Phases: rts.Run, Stderr: s.cfg.Stderr,
	}
	go func() {
		defer s.runs.Done()
		var res loop.Result
		if wf.loop != nil {
			res = loop.RunLoop(ctx, wf.loop, opts)
		} else {
			res = loop.RunTeam(ctx, wf.team, opts)
		}
		cancel(nil)
		rt.finishRun(hostrt.Result{ExitCode: res.ExitCode, StopReason: res.StopReason}, done)
	}()
	rt.markReady()
}
