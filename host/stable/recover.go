package stable

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/permission"
	hostrun "github.com/avenor-go/avenor/host/run"
	hostrt "github.com/avenor-go/avenor/host/runner"
	"github.com/avenor-go/avenor/host/sentinel"
	"github.com/avenor-go/avenor/sdk/plugin"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Recovering the runtimes of a supervisor that died on this socket
// (state.go). Each runtime comes back in the table under its id, with its
// log continued from the last seq it holds: a parked one as it was (a
// follow-up resumes its session in a fresh plugin, cross_process); one
// that was running is ended — its lingering plugin is stopped, its log gets
// an avenor.error and a session.end{stop_reason:"error"}, its sentinel
// FAILED — since its turn cannot be taken over. Nothing is started twice:
// a plugin is stopped, never launched again, by recovery.

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
		if rt.n > s.nextN {
			s.nextN = rt.n
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	if prev.NextN > s.nextN {
		s.nextN = prev.NextN
	}
	s.mu.Unlock()
}

// recoverRuntime rebuilds one runtime, parked or ended.
func (s *Supervisor) recoverRuntime(r runtimeState) (*runtime, error) {
	lastSeq, lastType, err := hostrun.LogTail(r.OnEvent)
	if err != nil {
		return nil, err
	}
	sp := spec{
		Spec: hostrun.Spec{RuntimeID: r.ID, EventLog: r.OnEvent, Options: hostrt.Options{
			Backend: r.Backend, Label: r.Label, Dir: r.Dir, RunID: r.RunID, SentinelPath: r.Sentinel, PermBase: r.PermBase,
			Model: r.Spawn.Model, Agent: r.Spawn.Agent, Thinking: r.Spawn.Thinking, DirExplicit: r.Spawn.Dir != "",
		}},
		agentProfile: r.Spawn.AgentProfile, parentID: r.Spawn.ParentID, parentRunID: r.Spawn.ParentRunID,
	}
	var dead string
	if r.Spawn.LoopFile != "" || r.Spawn.TeamFile != "" {
		dead = "ran a loop or team that the supervisor's restart ended"
	} else if b, err := s.cfg.Resolve(r.Dir, r.Spawn.configKeys()); err != nil {
		dead = fmt.Sprintf("cannot be resumed after the supervisor's restart: %v", err)
	} else {
		set := b.Settings
		sp.Options.Model, sp.Options.Agent, sp.Options.Thinking, sp.Options.ServerURL = set.Model, set.Agent, set.Thinking, set.ServerURL
		sp.Options.AutoApprove, sp.Options.Timeout, sp.Options.ProgressTimeout, sp.Options.MaxRetries = set.AutoApprove, set.Timeout, set.ProgressTimeout, set.MaxRetries
		sp.Options.PluginOptions, sp.Options.StateDir, sp.launch = b.PluginOptions, b.StateDir, b.Launch
		sp.Options.Env = s.runtimeEnv(b.Env)
	}
	fileBase, err := permission.FileBase(r.Spawn.PermissionHandler, sp.Options.SentinelPath, sp.Options.AutoApprove)
	if err != nil {
		fileBase = ""
	}
	rt := &runtime{
		s: s, id: r.ID, n: r.N, spec: sp, params: r.Spawn, started: r.Started, ready: make(chan struct{}),
		state: stateParked, sessionID: r.SessionID, dead: dead, parkedAt: s.cfg.Now().UnixMilli(),
	}
	rt.markReady()
	rt.run = hostrun.Restore(s.runSpec(rt, fileBase), lastSeq, hostrun.Deps{Control: control.Resolver{Server: s.srv}})
	rt.debug = newDebugTarget(rt)

	if r.AcceptedAt > 0 && lastSeq <= r.AcceptedAt {
		// A follow-up prompt was answered accepted, and its run wrote
		// nothing before the supervisor died: the log's session.end is the
		// turn before it. The prompt did not run; its turn ends in error,
		// so the harness waiting on it hears so, and the runtime is ended
		// (docs/stable.md#runtimes: only a turn that ended well parks). A plugin that
		// kept the session is stopped rather than trusted with a turn in
		// an unknown state.
		msg := fmt.Sprintf("runtime %s: the supervisor died after accepting a prompt and before its turn started; the prompt did not run (send it again in a new runtime: spawn with session_id %s)", r.ID, r.SessionID)
		if err := s.endTurnInError(rt, r, msg); err != nil {
			return nil, err
		}
		if r.Plugin != nil {
			hostrun.StopLingering(r.Plugin.PID)
		}
		return rt, nil
	}
	// A log that ends with a session.end holds a whole turn, whatever the
	// state file says: the supervisor may have died between writing that
	// line and the sentinel, or before it saved the runtime as parked.
	turnEnded := lastType == string(event.TypeSessionEnd)
	if turnEnded {
		s.settleEndedTurn(rt, r)
	}
	// A turn that ended badly ended its runtime (docs/stable.md#runtimes): its plugin
	// is not taken over to keep a session nobody can prompt.
	if p := r.Plugin; p != nil && r.SessionID != "" && rt.dead == "" && rt.endedLocked() == "" && hostrun.IsAvenorPlugin(p.PID) {
		if s.reattachRuntime(rt, r, lastType) {
			return rt, nil
		}
	}
	if r.State != persistRunning || turnEnded {
		// Parked or ended: its log and sentinel are whole. A plugin that
		// still lingers with the session could not be taken over: it is
		// stopped, and with it its runtime; the session resumes by id.
		if r.Plugin != nil {
			hostrun.StopLingering(r.Plugin.PID)
		}
		if rt.result == nil {
			if ec, stop, ok := hostrun.ReadSentinel(r.Sentinel); ok {
				rt.result = &hostrt.Result{ExitCode: ec, StopReason: stop, SessionID: r.SessionID}
			}
		}
		if r.State == persistEnded && rt.dead == "" && rt.endedLocked() == "" {
			rt.dead = "ended before the supervisor's restart"
		}
		return rt, nil
	}
	if r.Plugin != nil {
		hostrun.StopLingering(r.Plugin.PID)
	}
	msg := fmt.Sprintf("runtime %s: the supervisor died during its turn and the one that took over its socket could not re-attach to its plugin; the turn ended with stop reason error",
		r.ID)
	rt.dead = "lost its turn when the supervisor died"
	if len(r.Pending) > 0 {
		msg += fmt.Sprintf("; permission request %s was pending and is moot", r.Pending[len(r.Pending)-1].RequestID)
	}
	if err := s.endTurnInError(rt, r, msg); err != nil {
		return nil, err
	}
	return rt, nil
}

// endTurnInError ends the runtime's turn in its log and sentinel for the
// dead supervisor: an avenor.error saying msg (also on stderr), a
// session.end{stop_reason:"error"}, the sentinel FAILED.
func (s *Supervisor) endTurnInError(rt *runtime, r runtimeState, msg string) error {
	fmt.Fprintf(s.cfg.Stderr, "avenor stable: %s\n", msg)
	if err := rt.run.EndTurn(r.SessionID, msg); err != nil {
		return err
	}
	rec := sentinel.Record{ExitCode: sentinel.ExitFailure, SessionID: r.SessionID, StopReason: sdk.StopError, RunID: r.RunID}
	if err := sentinel.Write(r.Sentinel, rec); err != nil {
		fmt.Fprintf(s.cfg.Stderr, "avenor: writing sentinel: %v\n", err)
	}
	rt.result = &hostrt.Result{ExitCode: rec.ExitCode, StopReason: rec.StopReason, SessionID: r.SessionID}
	return nil
}

// settleEndedTurn gives a runtime whose log ends with a turn's session.end
// its result, read from its sentinel, or, when the supervisor died before
// writing it, from that session.end: the sentinel is written then, so a
// harness waiting on it does not wait for ever. The sentinel is always the
// last thing of a turn; the log's line says the turn is whole.
func (s *Supervisor) settleEndedTurn(rt *runtime, r runtimeState) {
	if ec, stop, ok := hostrun.ReadSentinel(r.Sentinel); ok {
		rt.result = &hostrt.Result{ExitCode: ec, StopReason: stop, SessionID: r.SessionID}
		return
	}
	sid, stop, err := sentinel.ReadLastSessionEnd(r.OnEvent)
	if err != nil {
		s.log.Warn("reading the last session.end of a runtime's log", "runtime_id", r.ID, "error", err)
		return
	}
	if sid == "" {
		sid = r.SessionID
	}
	rec := sentinel.Record{ExitCode: sentinel.ExitCode(stop), SessionID: sid, StopReason: stop, RunID: r.RunID}
	if err := sentinel.Write(r.Sentinel, rec); err != nil {
		fmt.Fprintf(s.cfg.Stderr, "avenor: writing sentinel: %v\n", err)
		return
	}
	s.log.Info("wrote the sentinel of a turn that ended just before the supervisor died", "runtime_id", r.ID, "stop_reason", stop)
	rt.result = &hostrt.Result{ExitCode: rec.ExitCode, StopReason: rec.StopReason, SessionID: sid}
}

// reattachRuntime takes the runtime's session over from the plugin that
// kept it: a turn still open in the log goes on in a run that awaits it
// (its permission requests asked again, its end written as usual); a
// parked session is held again. False: the plugin could not be reached or
// would not hand the session over, and recovery ends the runtime.
func (s *Supervisor) reattachRuntime(rt *runtime, r runtimeState, lastType string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), hostrun.ReattachWait)
	defer cancel()
	p := r.Plugin
	info := plugin.ReattachInfo{Network: p.Network, Address: p.Address, PID: p.PID, Protocol: p.Protocol, ProtocolVersion: p.ProtocolVersion}
	midTurn := lastType != string(event.TypeSessionEnd)
	adopt, err := hostrun.ReattachSession(ctx, info, r.Backend, r.SessionID, r.OnEvent, midTurn, s.log.Named(r.ID))
	if err != nil {
		s.log.Warn("re-attaching to a runtime's plugin", "runtime_id", r.ID, "pid", p.PID, "error", err)
		return false
	}
	l := adopt.Plugin
	rt.plugin, rt.scope = l.Client.Info().Name, l.Backend.Info().ResumeScope
	if midTurn {
		// Mid-turn (or before its first turn): a run continues it.
		s.mu.Lock()
		s.active++ // it runs already: admitted whatever the limits say now
		_ = s.tree.reserve(rt.id)
		rt.mu.Lock()
		rt.plan = adopt
		rt.startRunLocked(r.Spawn.Prompt, r.SessionID, nil)
		rt.mu.Unlock()
		s.mu.Unlock()
		s.answerRecorded(rt, r.Pending)
		return true
	}
	held, ra, err := hostrt.ReattachHeld(ctx, l, adopt.Reattach, s.log.Named(r.ID))
	if err != nil {
		s.log.Warn("taking a parked runtime's session over", "runtime_id", r.ID, "error", err)
		l.Client.Kill()
		return false
	}
	// Its log ends with its turn's session.end, and stays so: a harness
	// reads the last line as the runtime's state. Only a turn taken over
	// gets avenor.supervisor.reattached.
	s.log.Info("re-attached a parked runtime's plugin", "runtime_id", r.ID, "buffered", ra.BufferedEvents, "gap_ms", ra.Gap.Milliseconds())
	s.mu.Lock()
	rt.mu.Lock()
	rt.held, rt.launched = held, l
	rt.watchHeldLocked(held)
	evict := s.keepLocked(rt, rt.scope)
	rt.mu.Unlock()
	var toClose []*hostrt.HeldSession
	for _, v := range evict {
		if h := v.evictHeld(s.cfg.MaxKeptPlugins); h != nil {
			toClose = append(toClose, h)
		}
	}
	s.mu.Unlock()
	for _, h := range toClose {
		h.Close()
	}
	return true
}

// answerRecorded answers again, with the decision the dead supervisor
// recorded, a permission request it decided but whose decision may not
// have reached the plugin: the plugin asks it again after the take-over,
// and its runtime gets the decision once (the plugin takes one per request
// id).
func (s *Supervisor) answerRecorded(rt *runtime, perms []permissionState) {
	for _, p := range perms {
		if p.Delivery != deliveryDecided || len(p.Decision) == 0 {
			continue
		}
		var d struct {
			OptionID string `json:"option_id"`
			Kind     string `json:"kind"`
			Source   string `json:"source"`
		}
		if json.Unmarshal(p.Decision, &d) != nil || d.OptionID == "" {
			continue
		}
		id := p.RequestID
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			deadline := time.Now().Add(hostrun.ReattachWait)
			for time.Now().Before(deadline) {
				for _, req := range rt.run.Broker().Pending() {
					if req.ID == id {
						src := d.Source
						if !permission.ValidAnswerSource(src) {
							src = ""
						}
						if err := rt.run.Broker().Answer(id, permission.Answer{OptionID: d.OptionID, Source: src}); err != nil {
							s.log.Debug("answering a recorded decision again", "request_id", id, "error", err)
						}
						return
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
}
