package run

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/avenor-go/avenor/host/control/httpdebug"
	"github.com/avenor-go/avenor/host/event"
	hostrt "github.com/avenor-go/avenor/host/runner"
)

// A supervised runtime as the control views show it: its list / status
// entry (docs/control-protocol.md#list), its result, its status snapshot,
// and its --http-debug target.

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

// Entry is the runtime's list / status entry: every field of
// docs/control-protocol.md#list the runtime knows, plus parked,
// turn_state, pid, plugin, plugin_pid, resume_scope and a few more
// (additive); its owner adds its own (Owner.Describe).
func (rt *Runtime) Entry() map[string]any {
	o := rt.spec.Options
	f := rt.Facts()
	st := rt.Snapshot()
	status := StatusRunning
	switch f.State {
	case Parked:
		status = StatusIdle
		if f.Refusal != nil {
			status = StatusEnded
		}
	case Gone:
		status = StatusEnded
	}
	e := map[string]any{
		"runtime_id": rt.spec.RuntimeID, "session_id": f.SessionID, "run_id": o.RunID, "label": o.Label,
		"agent": o.Agent, "model": o.Model, "backend": o.Backend, "dir": o.Dir,
		"status": status, "phase": st.Phase, "phase_label": st.PhaseLabel, "latest_seq": rt.w.LatestSeq(),
		"usage": nil, "exit_code": nil, "stop_reason": "",
		"on_event": rt.spec.EventLog, "event_path": rt.spec.EventLog, "sentinel_file": o.SentinelPath,
		"final_output": "", "final_output_truncated": false,
		"pending_permission": st.PendingPermission, "permission": nil,
		// Additive fields.
		"thinking": o.Thinking, "parked": f.State == Parked, "parked_at": nil, "turn_state": st.TurnState,
		"last_event": string(st.LastEvent), "updated_at": st.UpdatedAt, "retry_attempt": st.RetryAttempt,
		"max_retries": o.MaxRetries, "runs": f.Runs, "pid": st.PID, "plugin": f.Plugin,
		"plugin_pid": f.PluginPID, "resume_scope": f.Scope, "kept_plugin": f.Kept,
	}
	if ph := rt.spec.Phased; ph != nil {
		e[ph.Kind+"_file"] = ph.File
	}
	if o.PermissionMode != "" {
		e["permission_mode"] = string(o.PermissionMode)
	}
	if st.Watchdog != nil {
		e["watchdog"] = st.Watchdog
	}
	addRateLimitFields(e, st)
	spendEntry(e, o.Spend)
	if st.PendingPermission && st.Permission != nil {
		e["permission"] = st.Permission
	}
	if f.State == Parked {
		e["parked_at"] = f.ParkedAt
		e["phase"] = hostrt.PhaseEnded
		if f.HandedTo != "" {
			e["resumed_by"] = f.HandedTo
		}
		if f.Lost != "" {
			e["session_lost"] = f.Lost
		}
	}
	if f.Result != nil && f.State != Running {
		e["exit_code"] = f.Result.ExitCode
		e["stop_reason"] = string(f.Result.StopReason)
	}
	if end, endCut := rt.LastEnd(); end != nil {
		if u, ok := end["usage"]; ok {
			e["usage"] = u
		}
		if f.State != Running {
			if final, ok := end["final_output"].(string); ok {
				final, cut := event.TruncateRunes(final, event.FinalOutputLimit)
				e["final_output"], e["final_output_truncated"] = final, cut || endCut
			}
		}
	}
	return e
}

// described is the entry with its owner's fields.
func (rt *Runtime) described() map[string]any {
	e := rt.Entry()
	rt.life.owner.Describe(e)
	return e
}

// supervisedResult is a supervised runtime's result: the last
// session.end's final_output, with its session, status, exit code and
// stop reason.
func (rt *Runtime) supervisedResult() any {
	e := rt.Entry()
	out := map[string]any{"runtime_id": rt.spec.RuntimeID, "final_output": "", "session_id": e["session_id"],
		"status": e["status"], "exit_code": e["exit_code"], "stop_reason": e["stop_reason"]}
	// Lossless (docs/control-protocol.md#methods): the kept text, or the
	// log's when the kept one is cut. final_output_truncated only when the
	// log failed us.
	final, truncated := rt.FinalOutput()
	out["final_output"] = final
	if truncated {
		out["final_output_truncated"] = true
	}
	return out
}

// StatusEntry is the current (or last) run's status snapshot
// (docs/control-protocol.md#status) with the runtime's runtime_id, entry
// status and parked: what status {} answers for it.
func (rt *Runtime) StatusEntry() map[string]any {
	out := map[string]any{}
	// The snapshot's own encoding keeps its keys in one place.
	b, err := json.Marshal(rt.Snapshot())
	if err == nil {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		err = d.Decode(&out)
	}
	if err != nil {
		rt.log.Error("encoding a runtime's status snapshot", "error", err)
	}
	e := rt.Entry()
	// Before its first session.start a run's snapshot may not know these.
	for _, k := range []string{"session_id", "run_id"} {
		if v, _ := out[k].(string); v == "" {
			out[k] = e[k]
		}
	}
	if v, _ := out["run_label"].(string); v == "" {
		out["run_label"] = e["label"]
	}
	out["runtime_id"], out["status"], out["parked"] = rt.spec.RuntimeID, e["status"], e["parked"]
	return out
}

// DebugTarget is the supervised runtime as the --http-debug adapter
// serves it: the method table's runtime (its entry as status, its cancel
// and answers) through the adapter's subscriptions (replay,
// de-duplication, an end once the runtime is closed), refusing a runtime
// that is gone with 404.
func (rt *Runtime) DebugTarget() httpdebug.Target { return debugTarget{rt} }

type debugTarget struct{ rt *Runtime }

func (t debugTarget) gone() error {
	if t.rt.State() == Gone {
		return fmt.Errorf("%w: %s", httpdebug.ErrRuntimeNotFound, t.rt.spec.RuntimeID)
	}
	return nil
}

func (t debugTarget) Status() any { return t.rt.debug.Status() }

func (t debugTarget) Subscribe(opts httpdebug.SubscribeOptions) (httpdebug.Subscription, error) {
	if err := t.gone(); err != nil {
		return nil, err
	}
	return t.rt.debug.Subscribe(opts)
}

func (t debugTarget) Cancel() error {
	if err := t.gone(); err != nil {
		return err
	}
	return t.rt.debug.Cancel()
}

func (t debugTarget) AnswerPermission(requestID, optionID, message string) error {
	if err := t.gone(); err != nil {
		return err
	}
	return t.rt.debug.AnswerPermission(requestID, optionID, message)
}
