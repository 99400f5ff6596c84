package stable

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/permission"
	hostrun "github.com/avenor-go/avenor/host/run"
	hostrt "github.com/avenor-go/avenor/host/runner"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// spawn starts a runtime (docs/control-protocol.md#spawn) and answers once its session is
// open (or its first run ended without one).
func (s *Supervisor) spawn(ctx context.Context, c *control.Call) (any, error) {
	var p SpawnParams
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.IdempotencyKey == "" {
		return s.Spawn(ctx, p)
	}
	stored, finish, err := s.idem.begin(ctx, p.IdempotencyKey, spawnHash(p))
	if err != nil {
		return nil, err
	}
	if stored != nil {
		return stored, nil
	}
	res, err := s.Spawn(ctx, p)
	if err != nil {
		finish(nil)
		return nil, err
	}
	finish(res)
	return res, nil
}

// Spawn starts a runtime from p (validated, without idempotency) and
// returns the spawn result.
func (s *Supervisor) Spawn(ctx context.Context, p SpawnParams) (map[string]any, error) {
	s.waitRecovered() // the ids of recovered runtimes are taken
	spawned, err := hostrun.ResolveSpawn(p.Request(), s.resolve)
	if err != nil {
		return nil, err
	}
	prompt, b, dir, wf := spawned.Prompt, spawned.Backend, spawned.Dir, spawned.Phased
	if err := spawned.CheckLaunch(ctx); err != nil {
		return nil, err
	}
	s.inheritSpend(p.ParentID, &spawned.Backend)
	if p.SessionID != "" {
		if err := s.checkResume(p.SessionID, b.Settings.Backend); err != nil {
			return nil, err
		}
		if err := s.checkResumeLaunch(p.SessionID, b); err != nil {
			return nil, err
		}
	}

	// An id and an executing slot; a fresh session of a warm pool's key
	// takes a warm runtime, whose slot becomes the runtime's.
	s.mu.Lock()
	id := runtimeID(s.nextN + 1)
	var warm *hostrt.HeldSession
	if p.SessionID == "" && wf == nil && !asksLaunch(b) {
		warm = s.takeWarmLocked(keyOf(b, dir))
	}
	if err := s.admitLocked(id); err != nil {
		s.mu.Unlock()
		if warm != nil {
			warm.Close()
		}
		return nil, err
	}
	s.nextN++
	n := s.nextN
	s.mu.Unlock()

	rt, err := s.newRuntime(id, n, p, spawned)
	if err != nil {
		s.mu.Lock()
		s.releaseLocked(id)
		s.mu.Unlock()
		if warm != nil {
			warm.Close()
		}
		return nil, err
	}

	// shutDown refuses the spawn the shutdown overtook: its stream is
	// closed, nothing runs; s.mu is held.
	shutDown := func() (map[string]any, error) {
		s.releaseLocked(id)
		s.mu.Unlock()
		rt.closeStream()
		if warm != nil {
			warm.Close()
		}
		return nil, ErrShuttingDown
	}
	s.mu.Lock()
	if s.closing {
		return shutDown()
	}
	s.runtimes[id] = rt
	rt.setParams(p)
	s.mu.Unlock()
	// Durable before anything runs: a supervisor that dies from here on
	// leaves its successor this runtime to end (its session.end and
	// sentinel written), never one that vanished. A state file that cannot
	// be written (a full disk) refuses the spawn.
	if err := s.saveSync(); err != nil {
		s.mu.Lock()
		delete(s.runtimes, id)
		s.releaseLocked(id)
		s.mu.Unlock()
		rt.closeStream()
		hostrun.RemoveArtifacts(rt.run.Spec(), filepath.Join(s.artifacts, id))
		if warm != nil {
			warm.Close()
		}
		s.dirty()
		return nil, fmt.Errorf("spawn refused, nothing was started: %w", err)
	}
	s.mu.Lock()
	if s.closing {
		// The shutdown retires it (it is in the table).
		return shutDown()
	}
	s.attachLocked(rt)
	held := warm
	if p.SessionID != "" {
		held = s.handOverLocked(p.SessionID, rt)
	}
	if wf != nil {
		rt.run.GoPhased(prompt)
	} else {
		rt.run.Go(hostrun.Turn{Prompt: prompt, Images: spawned.Images, Resume: p.SessionID, Held: held})
	}
	s.mu.Unlock()
	s.dirty()

	res := rt.run.SpawnAnswer(ctx, spawnWait)
	for k, v := range map[string]string{"backend": p.Backend, "agent": p.Agent, "model": p.Model, "agent_profile": p.AgentProfile,
		"roster_file": p.RosterFile, "roster_entry": p.RosterEntry} {
		if v != "" {
			res[k] = v
		}
	}
	return res, nil
}

// newRuntime builds a runtime's artifacts and its host/run runtime.
func (s *Supervisor) newRuntime(id string, n int, p SpawnParams, spawned hostrun.Spawned) (*runtime, error) {
	spec, err := spawned.Spec(id, NewRunID(), p.Dir != "", s.spawnOptions(id, p))
	if err != nil {
		return nil, err
	}
	rt := &runtime{s: s, id: id, n: n, started: s.cfg.Now().UnixMilli()}
	// A named pipe or device is refused, as for `run --on-event`: a pipe
	// nobody reads would block the open or the log.
	rt.run, err = hostrun.New(spec, s.runDeps(rt))
	if err != nil {
		return nil, control.InvalidParams(fmt.Sprintf("on_event: %v", err))
	}
	return rt, nil
}

// spawnOptions are runtime id's files as p named them, and what the
// supervisor gives every runtime.
func (s *Supervisor) spawnOptions(id string, p SpawnParams) hostrun.SpawnOptions {
	return hostrun.SpawnOptions{
		OnEvent: p.OnEvent, SentinelFile: p.SentinelFile, PermissionHandler: p.PermissionHandler, Artifacts: filepath.Join(s.artifacts, id),
		Logger: s.log.Named(id), Stderr: s.cfg.Stderr, Now: s.cfg.Now,
		Permissions: permission.Options{ClaimTimeout: s.cfg.PermissionClaimTimeout, File: permission.FileOptions{Timeout: s.cfg.PermissionFileTimeout}},
	}
}

// resolve is Config.Resolve, the backend's plugins getting the runtimes'
// environment (runtimeEnv).
func (s *Supervisor) resolve(dir string, set map[string]any) (Backend, error) {
	b, err := s.cfg.Resolve(dir, set)
	b.Env = s.runtimeEnv(b.Env)
	return b, err
}

// checkResume refuses a session_id that a runtime of this supervisor is
// using, belongs to another backend, or was lost with its plugin.
func (s *Supervisor) checkResume(sessionID, backend string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rt := range s.runtimes {
		f, rb := rt.run.Facts(), rt.run.Spec().Options.Backend
		if f.SessionID != sessionID || f.HandedTo != "" {
			continue
		}
		switch {
		case f.State == hostrun.Running:
			return fmt.Errorf("session %s is in use by running runtime %s; prompt it instead", sessionID, rt.id)
		case rb != backend:
			return fmt.Errorf("session %s belongs to runtime %s of backend %s, not %s", sessionID, rt.id, rb, backend)
		case f.State == hostrun.Parked && f.Scope == sdk.ResumeInProcess && !f.HeldAlive:
			return fmt.Errorf("%w: session %s of runtime %s: its plugin is no longer running and backend %s resumes sessions only inside that process (resume scope in_process)",
				ErrSessionLost, sessionID, rt.id, rb)
		}
	}
	return nil
}

// handOverLocked gives the new runtime the plugin of the parked runtime
// whose session it resumes, if it kept one; the parked runtime then points
// its follow-ups to the new one.
func (s *Supervisor) handOverLocked(sessionID string, to *runtime) *hostrt.HeldSession {
	for _, rt := range s.runtimes {
		if rt == to {
			continue
		}
		if h, plugin, scope, ok := rt.run.HandOver(sessionID, to.id); ok {
			s.unkeepLocked(rt, nil)
			to.run.Takes(plugin, scope)
			return h
		}
	}
	return nil
}
