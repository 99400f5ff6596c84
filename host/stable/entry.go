package stable

import (
	"github.com/avenor-go/avenor/host/event"
	hostrt "github.com/avenor-go/avenor/host/runner"
)

// Entry statuses (docs/control-protocol.md#list). A runtime parked after a
// turn that ended well, waiting for a follow-up, is "idle" (parked:true,
// exit_code 0); "ended" is a runtime that can take no more prompts: its
// turn was cancelled, failed, timed out or lost its plugin (exit_code and
// the sentinel say which), its loop or team is over, its session continues
// in another runtime or was lost with its plugin, or the supervisor stopped
// it. An ended runtime lists parked:true too until it is reaped.
const (
	StatusIdle    = "idle"
	StatusRunning = "running"
	StatusEnded   = "ended"
)

// Runtimes returns every runtime's entry, in id order (the list method).
func (s *Supervisor) Runtimes() []map[string]any {
	list, children := s.sorted()
	out := make([]map[string]any, 0, len(list))
	for _, rt := range list {
		out = append(out, rt.entry(children[rt.id]))
	}
	return out
}

// Runtime returns one runtime's entry (status {runtime_id}); an unknown id
// is an error wrapping ErrUnknownRuntime.
func (s *Supervisor) Runtime(id string) (map[string]any, error) {
	rt, err := s.lookup(id)
	if err != nil {
		return nil, err
	}
	_, children := s.sorted()
	return rt.entry(children[rt.id]), nil
}

// Events returns a runtime's event writer: its history and subscriptions.
func (s *Supervisor) Events(id string) (*event.Writer, error) {
	rt, err := s.lookup(id)
	if err != nil {
		return nil, err
	}
	return rt.run.Events(), nil
}

// Cancel cancels a runtime's running run (stop reason cancelled); a parked
// runtime has nothing to cancel.
func (s *Supervisor) Cancel(id string) error {
	rt, err := s.lookup(id)
	if err != nil {
		return err
	}
	rt.cancel()
	return nil
}

// entry is the runtime's list / status entry: every field of docs/control-protocol.md#list,
// plus parked, turn_state, pid, plugin, plugin_pid, resume_scope and a few
// more (additive).
func (rt *runtime) entry(children []string) map[string]any {
	if children == nil {
		children = []string{}
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	sp := rt.spec
	st := rt.run.Snapshot()
	status := StatusRunning
	switch rt.state {
	case stateParked:
		status = StatusIdle
		if rt.refusalLocked() != nil {
			status = StatusEnded
		}
	case stateGone:
		status = StatusEnded
	}
	e := map[string]any{
		"runtime_id": rt.id, "session_id": rt.sessionID, "run_id": sp.Options.RunID, "label": sp.Options.Label,
		"agent": sp.Options.Agent, "model": sp.Options.Model, "backend": sp.Options.Backend, "dir": sp.Options.Dir,
		"status": status, "phase": st.Phase, "phase_label": st.PhaseLabel,
		"parent_id": sp.parentID, "children": children, "latest_seq": rt.run.Events().LatestSeq(),
		"usage": nil, "exit_code": nil, "stop_reason": "",
		"on_event": sp.EventLog, "event_path": sp.EventLog, "sentinel_file": sp.Options.SentinelPath,
		"final_output": "", "final_output_truncated": false,
		"pending_permission": st.PendingPermission, "permission": nil,
		"started_at": rt.started,
		// Additive fields.
		"agent_profile": sp.agentProfile, "parent_run_id": sp.parentRunID, "thinking": sp.Options.Thinking,
		"parked": rt.state == stateParked, "parked_at": nil, "turn_state": st.TurnState,
		"last_event": string(st.LastEvent), "updated_at": st.UpdatedAt, "retry_attempt": st.RetryAttempt,
		"max_retries": sp.Options.MaxRetries, "runs": rt.runs, "pid": st.PID, "plugin": rt.plugin,
		"plugin_pid": 0, "resume_scope": rt.scope, "kept_plugin": rt.held != nil,
	}
	if wf := rt.spec.Phased; wf != nil {
		e[wf.Kind+"_file"] = wf.File
	}
	if st.PendingPermission && st.Permission != nil {
		e["permission"] = st.Permission
	}
	if rt.launched != nil {
		e["plugin_pid"] = rt.launched.Client.PID()
	}
	if rt.state == stateParked {
		e["parked_at"] = rt.parkedAt
		e["phase"] = hostrt.PhaseEnded
		if rt.handedTo != "" {
			e["resumed_by"] = rt.handedTo
		}
		if rt.lost != "" {
			e["session_lost"] = rt.lost
		}
	}
	if rt.result != nil && rt.state != stateRunning {
		e["exit_code"] = rt.result.ExitCode
		e["stop_reason"] = string(rt.result.StopReason)
	}
	if end, endCut := rt.run.LastEnd(); end != nil {
		if u, ok := end["usage"]; ok {
			e["usage"] = u
		}
		if rt.state != stateRunning {
			if f, ok := end["final_output"].(string); ok {
				f, cut := event.TruncateRunes(f, event.FinalOutputLimit)
				e["final_output"], e["final_output_truncated"] = f, cut || endCut
			}
		}
	}
	return e
}
