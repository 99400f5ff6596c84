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
		rt.mu.Lock()
		rt.plugin, rt.scope = l.Client.Info().Name, l.Backend.Info().ResumeScope
		rt.mu.Unlock()
	}
	if p.SessionID != "" {
		held = s.handOverLocked(p.SessionID, rt)
	}
	rt.mu.Lock()
	if wf != nil {
		rt.startPhasedLocked(prompt)
	} else {
		rt.startRunLocked(prompt, p.SessionID, held)
	}
	rt.mu.Unlock()
	s.mu.Unlock()
	s.dirty()

	t := time.NewTimer(spawnWait)
	defer t.Stop()
	select {
	case <-rt.ready:
	case <-ctx.Done():
	case <-t.C:
	}
	sp := rt.spec
	sid := rt.session()
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

// newRuntime builds a runtime's artifacts, stream and broker.
func (s *Supervisor) newRuntime(id string, n int, p SpawnParams, b Backend, dir string, wf *phasedRun) (*runtime, error) {
	set := b.Settings
	sp := spec{
		Spec: hostrun.Spec{RuntimeID: id, Phased: wf, EventLog: p.OnEvent, Options: hostrt.Options{
			Backend: set.Backend, Model: set.Model, Agent: set.Agent, Thinking: set.Thinking, Label: set.Label,
			Dir: dir, DirExplicit: p.Dir != "", ServerURL: set.ServerURL, RunID: NewRunID(), SentinelPath: p.SentinelFile,
			AutoApprove: set.AutoApprove, Timeout: set.Timeout, ProgressTimeout: set.ProgressTimeout, MaxRetries: set.MaxRetries,
			PluginOptions: b.PluginOptions, StateDir: b.StateDir, Env: s.runtimeEnv(b.Env),
		}},
		agentProfile: p.AgentProfile, parentID: p.ParentID, parentRunID: p.ParentRunID, launch: b.Launch,
	}
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
	rt := &runtime{
		s: s, id: id, n: n, spec: sp, started: s.cfg.Now().UnixMilli(), ready: make(chan struct{}),
		state: stateRunning,
	}
	// A named pipe or device is refused, as for `run --on-event`: a pipe
	// nobody reads would block the open or the log.
	rt.run, err = hostrun.New(s.runSpec(rt, fileBase), hostrun.Deps{Control: control.Resolver{Server: s.srv}})
	if err != nil {
		return nil, control.InvalidParams(fmt.Sprintf("on_event: %v", err))
	}
	rt.debug = newDebugTarget(rt)
	return rt, nil
}

// runSpec is the runtime's spec with its own hooks — its runs' typed
// facts and permission records, the launch that remembers the plugin, its
// logger — and its broker's options (fileBase: the file handler's base, ""
// for none).
func (s *Supervisor) runSpec(rt *runtime, fileBase string) hostrun.Spec {
	sp := rt.spec.Spec
	o := &sp.Options
	o.OnEvent, o.OnEventTypes, o.Observer = rt.persistEvent, persistTypes, runFacts{rt}
	o.Launch, o.KeepSession = rt.launch, true
	o.Logger, o.Stderr, o.Now = s.log.Named(rt.id), s.cfg.Stderr, s.cfg.Now
	sp.Permissions = permission.Options{
		AutoApprove: o.AutoApprove, FileBase: fileBase, ClaimTimeout: s.cfg.PermissionClaimTimeout,
		File: permission.FileOptions{Timeout: s.cfg.PermissionFileTimeout}, CancelRun: rt.cancel, SessionID: rt.session,
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
		rt.mu.Lock()
		sid, state, rb, handed := rt.sessionID, rt.state, rt.spec.Options.Backend, rt.handedTo
		lostScope := rt.scope == sdk.ResumeInProcess && (rt.held == nil || !rt.held.Alive())
		rt.mu.Unlock()
		if sid != sessionID || handed != "" {
			continue
		}
		switch {
		case state == stateRunning:
			return fmt.Errorf("session %s is in use by running runtime %s; prompt it instead", sessionID, rt.id)
		case rb != backend:
			return fmt.Errorf("session %s belongs to runtime %s of backend %s, not %s", sessionID, rt.id, rb, backend)
		case state == stateParked && lostScope:
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
		rt.mu.Lock()
		if rt.state != stateParked || rt.sessionID != sessionID || rt.handedTo != "" {
			rt.mu.Unlock()
			continue
		}
		rt.handedTo = to.id
		h := rt.takeHeldLocked()
		scope, plugin := rt.scope, rt.plugin
		rt.mu.Unlock()
		s.unkeepLocked(rt)
		to.mu.Lock()
		to.scope, to.plugin = scope, plugin
		to.mu.Unlock()
		return h
	}
	return nil
}
