package stable

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/loop"
	"github.com/avenor-go/avenor/host/permission"
	hostrun "github.com/avenor-go/avenor/host/run"
	hostrt "github.com/avenor-go/avenor/host/runner"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/safefile"
)

// Default artifact names under <TempDir>/avenor-stable/<run id>/<runtime id>/.
const (
	EventsFile   = "events.ndjson"
	SentinelFile = "sentinel.env"
)

// spawn starts a runtime (docs/control-protocol.md#spawn) and answers once its session is
// open (or its first run ended without one).
func (s *Supervisor) spawn(ctx context.Context, c *control.Call) (any, error) {
	var p SpawnParams
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	if p.IdempotencyKey == "" {
		return s.Spawn(ctx, p)
	}
	stored, finish, err := s.idem.begin(ctx, p.IdempotencyKey, p.hash())
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
	// A prompt the wire cannot carry (not UTF-8, over sdk.MaxPromptBytes)
	// is refused here, not by the plugin's broken stream after launch: the
	// prompt param itself is -32602; a prompt_file the spawn cannot use
	// (missing, not a regular file, its content too long) is the spawn's
	// own failure, -32000 with the text (docs/control-protocol.md#errors).
	prompt := p.Prompt
	if p.PromptFile != "" {
		var err error
		if prompt, err = hostrun.ReadPromptFile("prompt_file", p.PromptFile); err != nil {
			return nil, err
		}
	} else if err := sdk.CheckPrompt("prompt", prompt); err != nil {
		return nil, control.InvalidParams(err.Error())
	}
	start := p.Dir
	if start == "" {
		start = "."
	}
	absStart, err := filepath.Abs(start)
	if err != nil {
		return nil, fmt.Errorf("dir %q: %w", p.Dir, err)
	}
	roster, err := spawnRoster(p, absStart)
	if err != nil {
		return nil, err
	}
	keys := p.configKeys()
	var entry loop.RosterEntry
	if p.RosterEntry != "" {
		// Direct mode (docs/loop.md#rosters): the entry is the backend, agent and model; its
		// thinking is the default under an explicit one.
		if entry, err = rosterEntry(roster, p.RosterEntry); err != nil {
			return nil, err
		}
		keys["backend"] = entry.Backend
	}
	b, err := s.cfg.Resolve(absStart, keys)
	if err != nil {
		return nil, err
	}
	if p.RosterEntry != "" {
		id := loop.Identity{Thinking: b.Settings.Thinking}.FromEntry(entry)
		b.Settings.Backend, b.Settings.Agent, b.Settings.Model, b.Settings.Thinking = id.Backend, id.Agent, id.Model, id.Thinking
	}
	set := b.Settings
	dir, err := hostrun.WorkDir("dir", set.Dir)
	var derr *hostrun.DirError
	if errors.As(err, &derr) {
		return nil, control.InvalidParams(err.Error())
	}
	if err != nil {
		return nil, err
	}
	if p.SessionID != "" {
		if err := s.checkResume(p.SessionID, set.Backend); err != nil {
			return nil, err
		}
	}
	var wf *phasedRun
	if p.LoopFile != "" || p.TeamFile != "" {
		if wf, err = s.loadPhased(p, absStart, roster, b); err != nil {
			return nil, err
		}
	}

	// An id and an executing slot; a fresh session of a warm pool's key
	// takes a warm runtime, whose slot becomes the runtime's.
	s.mu.Lock()
	id := runtimeID(s.nextN + 1)
	var warm *hostrt.HeldSession
	if p.SessionID == "" && wf == nil {
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

	rt, err := s.newRuntime(id, n, p, b, dir, wf)
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
	rt.params = p
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
		s.removeDefaultArtifacts(rt)
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
	if held != nil {
		l := held.Plugin()
		rt.run.Takes(l.Client.Info().Name, l.Backend.Info().ResumeScope)
	}
	if p.SessionID != "" {
		held = s.handOverLocked(p.SessionID, rt)
	}
	if wf != nil {
		rt.run.GoPhased(prompt)
	} else {
		rt.run.Go(hostrun.Turn{Prompt: prompt, Resume: p.SessionID, Held: held})
	}
	s.mu.Unlock()
	s.dirty()

	t := time.NewTimer(spawnWait)
	defer t.Stop()
	select {
	case <-rt.run.Ready():
	case <-ctx.Done():
	case <-t.C:
	}
	sp := rt.spec
	sid := rt.run.Session()
	if wf != nil {
		sid = "" // every phase has a session of its own (docs/control-protocol.md#spawn)
	}
	res := map[string]any{
		"runtime_id": id, "session_id": sid, "on_event": sp.EventLog, "sentinel_file": sp.Options.SentinelPath,
		"run_id": sp.Options.RunID, "effective_backend": sp.Options.Backend,
	}
	opt := func(key, v string) {
		if v != "" {
			res[key] = v
		}
	}
	opt("backend", p.Backend)
	opt("agent", p.Agent)
	opt("model", p.Model)
	opt("agent_profile", p.AgentProfile)
	opt("effective_agent", sp.Options.Agent)
	opt("effective_model", sp.Options.Model)
	opt("label", sp.Options.Label)
	opt("roster_file", p.RosterFile)
	opt("roster_entry", p.RosterEntry)
	return res, nil
}

// newRuntime builds a runtime's artifacts and its host/run runtime.
func (s *Supervisor) newRuntime(id string, n int, p SpawnParams, b Backend, dir string, wf *phasedRun) (*runtime, error) {
	set := b.Settings
	sp := hostrun.Spec{RuntimeID: id, Phased: wf, EventLog: p.OnEvent, Options: hostrt.Options{
		Label: set.Label, Dir: dir, DirExplicit: p.Dir != "", RunID: NewRunID(), SentinelPath: p.SentinelFile,
	}}
	s.resolved(&sp.Options, b)
	if sp.EventLog == "" || sp.Options.SentinelPath == "" {
		// <TempDir>/avenor-stable is a predictable name in a shared
		// directory: each level must be ours and 0700, or another user
		// who made it first would read or redirect the runtime's files.
		rtDir := filepath.Join(s.artifacts, id)
		for _, d := range []string{filepath.Dir(s.artifacts), s.artifacts, rtDir} {
			if err := safefile.PrivateDir(d); err != nil {
				return nil, fmt.Errorf("runtime artifacts: %w (or give the spawn on_event and sentinel_file)", err)
			}
		}
		if sp.EventLog == "" {
			sp.EventLog = filepath.Join(rtDir, EventsFile)
		}
		if sp.Options.SentinelPath == "" {
			sp.Options.SentinelPath = filepath.Join(rtDir, SentinelFile)
		}
	}
	fileBase, err := permission.FileBase(p.PermissionHandler, sp.Options.SentinelPath, sp.Options.AutoApprove)
	if err != nil {
		return nil, control.InvalidParams(err.Error())
	}
	sp.Options.PermBase = fileBase
	if sp.Options.PermBase == "" {
		sp.Options.PermBase = permission.DerivePermBase(sp.Options.SentinelPath)
	}
	hostrt.CleanFiles(sp.Options.SentinelPath, sp.Options.PermBase, s.log.Warn)
	rt := &runtime{s: s, id: id, n: n, started: s.cfg.Now().UnixMilli()}
	rt.spec = s.runSpec(sp, fileBase)
	// A named pipe or device is refused, as for `run --on-event`: a pipe
	// nobody reads would block the open or the log.
	rt.run, err = hostrun.New(rt.spec, s.runDeps(rt))
	if err != nil {
		return nil, control.InvalidParams(fmt.Sprintf("on_event: %v", err))
	}
	return rt, nil
}

// resolved sets o to the resolved backend b.
func (s *Supervisor) resolved(o *hostrt.Options, b Backend) {
	set := b.Settings
	o.Backend, o.Model, o.Agent, o.Thinking, o.ServerURL = set.Backend, set.Model, set.Agent, set.Thinking, set.ServerURL
	o.AutoApprove, o.Timeout, o.ProgressTimeout, o.MaxRetries = set.AutoApprove, set.Timeout, set.ProgressTimeout, set.MaxRetries
	o.PluginOptions, o.StateDir, o.Launch, o.Env = b.PluginOptions, b.StateDir, b.Launch, s.runtimeEnv(b.Env)
}

// runSpec is sp with the supervisor's logger, clock and stderr, and its
// broker's options (fileBase: the file handler's base, "" for none).
func (s *Supervisor) runSpec(sp hostrun.Spec, fileBase string) hostrun.Spec {
	o := &sp.Options
	o.Logger, o.Stderr, o.Now = s.log.Named(sp.RuntimeID), s.cfg.Stderr, s.cfg.Now
	sp.Permissions = permission.Options{
		AutoApprove: o.AutoApprove, FileBase: fileBase, ClaimTimeout: s.cfg.PermissionClaimTimeout,
		File: permission.FileOptions{Timeout: s.cfg.PermissionFileTimeout},
	}
	return sp
}

// removeDefaultArtifacts removes the empty log and the directory a refused
// spawn got under the default artifacts (paths the spawn named are left
// as they are).
func (s *Supervisor) removeDefaultArtifacts(rt *runtime) {
	rtDir := filepath.Join(s.artifacts, rt.id)
	for _, p := range []string{rt.spec.EventLog, rt.spec.Options.SentinelPath} {
		if filepath.Dir(p) == rtDir {
			_ = os.Remove(p)
		}
	}
	_ = os.Remove(rtDir) // only when empty
}

// checkResume refuses a session_id that a runtime of this supervisor is
// using, belongs to another backend, or was lost with its plugin.
func (s *Supervisor) checkResume(sessionID, backend string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rt := range s.runtimes {
		f, rb := rt.run.Facts(), rt.spec.Options.Backend
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
