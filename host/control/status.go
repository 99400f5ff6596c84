package control

import (
	"encoding/json"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Turn states of the status snapshot (docs/control-protocol.md#status).
const (
	TurnIdle       = "idle"
	TurnStarting   = "starting"
	TurnRunning    = "running"
	TurnEnding     = "ending"
	TurnCancelling = "cancelling"
	TurnEnded      = "ended"
)

// Agent phases of agent.status (docs/events.md#agentstatus); the snapshot's phase is one
// of these, "idle" before the first turn and between turns, or "ended".
const (
	PhaseIdle     = "idle"
	PhaseThinking = "thinking"
	PhaseWorking  = "working"
	PhaseWaiting  = "waiting"
	PhaseDone     = "done"
	PhaseEnded    = "ended"
)

// Status is a runtime's status snapshot (docs/control-protocol.md#status):
// what status answers for the run of `avenor run`, and what a stable
// runtime's entry is built from. The runner keeps it; the control plane
// owns its shape, so that it needs nothing of the runner to show it.
type Status struct {
	SessionID         string
	RunID             string
	RunLabel          string
	Phase             string
	PhaseLabel        string
	LastEvent         sdk.EventType
	RetryAttempt      int
	MaxRetries        int
	PendingPermission bool
	Permission        event.Event // the permission.request fields, nil when none
	StartedAt         int64       // Unix ms
	UpdatedAt         int64       // Unix ms
	TurnState         string
	LatestSeq         int64
	PID               int // the runtime process, 0 when unknown
	// Watchdog is the run's last turn-watchdog firing (kind, tool, at,
	// action, idle_for_ms, count), nil when none: shown only when set.
	Watchdog map[string]any
	// WaitingReason is why a running turn waits ("rate_limit"), and
	// RateLimitedUntil (RFC 3339) until when; both empty, and not shown,
	// when it does not.
	WaitingReason    string
	RateLimitedUntil string
}

// MarshalJSON writes the snapshot with the contract's keys; permission is
// null when nothing is pending.
func (s Status) MarshalJSON() ([]byte, error) {
	m := map[string]any{
		"session_id": s.SessionID, "run_id": s.RunID, "run_label": s.RunLabel, "phase": s.Phase,
		"phase_label": s.PhaseLabel, "last_event": string(s.LastEvent), "retry_attempt": s.RetryAttempt,
		"max_retries": s.MaxRetries, "pending_permission": s.PendingPermission, "permission": nil,
		"started_at": s.StartedAt, "updated_at": s.UpdatedAt, "turn_state": s.TurnState,
		"latest_seq": s.LatestSeq, "pid": s.PID,
	}
	if s.Permission != nil {
		m["permission"] = s.Permission
	}
	if s.Watchdog != nil {
		m["watchdog"] = s.Watchdog
	}
	if s.WaitingReason != "" {
		m["waiting_reason"], m["rate_limited_until"] = s.WaitingReason, s.RateLimitedUntil
	}
	return json.Marshal(m)
}
