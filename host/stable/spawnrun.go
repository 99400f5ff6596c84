package stable

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/loop"
	"github.com/avenor-go/avenor/host/permission"
	hostrt "github.com/avenor-go/avenor/host/runtime"
	"github.com/avenor-go/avenor/internal/regularfile"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Default artifact names under <TempDir>/avenor-stable/<run id>/<runtime id>/.
const (
	EventsFile   = "events.ndjson"
	SentinelFile = "sentinel.env"
)

// spawn starts a runtime (contract §5.6) and answers once its session is
// open (or its first run ended without one).
func (s *Supervisor) spawn(ctx context.Context, c *control.Call) (any, error) {
	var p SpawnParams
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	if err := p.validate(); err != nil {
		return nil, control.InvalidParams(err.Error())
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
	prompt := p.Prompt
	if p.PromptFile != "" {
		data, err := regularfile.ReadFile(p.PromptFile)
		if err != nil {
			return nil, control.InvalidParams(fmt.Sprintf("prompt_file: %v", err))
		}
		prompt = string(data)
	}
	start := p.Dir
	if start == "" {
		start = "."
	}
	absStart, err := filepath.Abs(start)
	if err != nil {
		return nil, control.InvalidParams(fmt.Sprintf("dir %q: %v", p.Dir, err))
	}
	roster, err := spawnRoster(p, absStart)
	if err != nil {
		return nil, err
	}
	keys := p.configKeys()
	var entry loop.RosterEntry
	if p.RosterEntry != "" {
		// Direct mode (§1.2): the entry is the backend, agent and model; its
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
	dir, err := filepath.Abs(set.Dir)
	if err != nil {
		return nil, control.InvalidParams(fmt.Sprintf("dir %q: %v", set.Dir, err))
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, control.InvalidParams(fmt.Sprintf("dir %q is not a directory", set.Dir))
	}
	if p.SessionID != "" {
		if err := s.checkResume(p.SessionID, set.Backend); err != nil {
			return nil, err
		}
	}
	var wf *workflow
	if p.LoopFile != "" || p.TeamFile != "" {
		if wf, err = s.loadWorkflow(p, absStart, roster, b); err != nil {
			return nil, err
		}
	}

	// An id and an executing slot.
	s.mu.Lock()
	id := runtimeID(s.nextN + 1)
	if err := s.admitLocked(id); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.nextN++
	n := s.nextN
	s.mu.Unlock()

	rt, err := s.newRuntime(id, n, p, b, dir)
	if err == nil {
		rt.wf = wf
	}
	if err != nil {
		s.mu.Lock()
		s.releaseLocked(id)
		s.mu.Unlock()
		return nil, err
	}

	s.mu.Lock()
	if s.closing {
		s.releaseLocked(id)
		s.mu.Unlock()
		rt.closeStream()
		return nil, ErrShuttingDown
	}
	s.runtimes[id] = rt
	s.attachLocked(rt)
	var held *hostrt.HeldSession
	if p.SessionID != "" {
		held = s.handOverLocked(p.SessionID, rt)
	}
	rt.mu.Lock()
	if wf != nil {
		rt.startWorkflowLocked(prompt)
	} else {
		rt.startRunLocked(prompt, p.SessionID, held)
	}
	rt.mu.Unlock()
	s.mu.Unlock()

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
		sid = "" // every phase has a session of its own (§6.8)
	}
	res := map[string]any{
		"runtime_id": id, "session_id": sid, "on_event": sp.onEvent, "sentinel_file": sp.sentinel,
		"run_id": sp.runID, "effective_backend": sp.backend,
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
	opt("effective_agent", sp.agent)
	opt("effective_model", sp.model)
	opt("label", sp.label)
	opt("roster_file", p.RosterFile)
	opt("roster_entry", p.RosterEntry)
	return res, nil
}

// newRuntime builds a runtime's artifacts, stream and broker.
func (s *Supervisor) newRuntime(id string, n int, p SpawnParams, b Backend, dir string) (*runtime, error) {
	set := b.Settings
	sp := spec{
		backend: set.Backend, model: set.Model, agent: set.Agent, agentProfile: p.AgentProfile, thinking: set.Thinking,
		label: set.Label, dir: dir, dirExplicit: p.Dir != "", serverURL: set.ServerURL, runID: NewRunID(),
		onEvent: p.OnEvent, sentinel: p.SentinelFile, parentID: p.ParentID, parentRunID: p.ParentRunID,
		autoApprove: set.AutoApprove, timeout: set.Timeout, progressTimeout: set.ProgressTimeout,
		maxRetries: set.MaxRetries, pluginOptions: b.PluginOptions, stateDir: b.StateDir, launch: b.Launch,
	}
	sp.env = make(map[string]string, len(b.Env)+1)
	for k, v := range b.Env {
		sp.env[k] = v
	}
	if path := s.tree.Path(); path != "" {
		// A supervisor the runtime starts joins this tree.
		sp.env[EnvTreeBudget] = path
	}
	if sp.onEvent == "" || sp.sentinel == "" {
		rtDir := filepath.Join(s.artifacts, id)
		if err := os.MkdirAll(rtDir, 0o700); err != nil {
			return nil, fmt.Errorf("runtime artifacts: %w", err)
		}
		if sp.onEvent == "" {
			sp.onEvent = filepath.Join(rtDir, EventsFile)
		}
		if sp.sentinel == "" {
			sp.sentinel = filepath.Join(rtDir, SentinelFile)
		}
	}
	fileBase, err := permission.FileBase(p.PermissionHandler, sp.sentinel, sp.autoApprove)
	if err != nil {
		return nil, control.InvalidParams(err.Error())
	}
	sp.permBase = fileBase
	sp.permFile = fileBase != ""
	if sp.permBase == "" {
		sp.permBase = permission.DerivePermBase(sp.sentinel)
	}
	hostrt.CleanFiles(sp.sentinel, sp.permBase, s.log.Warn)
	file, err := os.Create(sp.onEvent)
	if err != nil {
		return nil, control.InvalidParams(fmt.Sprintf("on_event: %v", err))
	}
	rt := &runtime{
		s: s, id: id, n: n, spec: sp, file: file, started: s.cfg.Now().UnixMilli(), ready: make(chan struct{}),
		state: stateRunning,
	}
	rt.w = event.NewWriter(file, event.Stamp{RunID: sp.runID, RunLabel: sp.label, RuntimeID: id, Now: s.cfg.Now}, event.Options{})
	perms := permission.Options{
		AutoApprove: sp.autoApprove, FileBase: fileBase, ClaimTimeout: s.cfg.PermissionClaimTimeout,
		File: permission.FileOptions{Timeout: s.cfg.PermissionFileTimeout}, CancelRun: rt.cancel, SessionID: rt.session,
	}
	rt.broker = permission.New(perms)
	rt.broker.SetControl(control.Resolver{Server: s.srv})
	rt.debug = newDebugTarget(rt)
	return rt, nil
}

// checkResume refuses a session_id that a runtime of this supervisor is
// using, belongs to another backend, or was lost with its plugin.
func (s *Supervisor) checkResume(sessionID, backend string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rt := range s.runtimes {
		rt.mu.Lock()
		sid, state, rb, handed := rt.sessionID, rt.state, rt.spec.backend, rt.handedTo
		lostScope := rt.scope == sdk.ResumeInProcess && (rt.held == nil || !rt.held.Alive())
		rt.mu.Unlock()
		if sid != sessionID || handed != "" {
			continue
		}
		switch {
		case state == stateRunning:
			return control.InvalidParams(fmt.Sprintf("session %s is in use by running runtime %s; prompt it instead", sessionID, rt.id))
		case rb != backend:
			return control.InvalidParams(fmt.Sprintf("session %s belongs to runtime %s of backend %s, not %s", sessionID, rt.id, rb, backend))
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
