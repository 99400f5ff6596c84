package channel

import (
	"encoding/json"
	"time"
)

// Bounds of the broker and the sidecar.
const (
	// MaxBodyBytes caps every broker request body (1 MiB, docs/backends.md#claude-channel-plugin-claude-experimental).
	MaxBodyBytes = 1 << 20
	// MaxPollWait is the longest a /poll-control long-poll is held open
	// (2 s, docs/backends.md#claude-channel-plugin-claude-experimental); a larger wait_ms is clamped to it.
	MaxPollWait = 2 * time.Second
	// HeartbeatInterval is how often the sidecar calls /heartbeat (5 s).
	HeartbeatInterval = 5 * time.Second
	// MaxQueuedControls bounds the control messages waiting for one run's
	// sidecar; /push-control beyond it answers 429.
	MaxQueuedControls = 256
	// MaxFrameBytes is the longest MCP stdio line the sidecar reads (4 MiB);
	// a longer one is answered with a parse error and skipped.
	MaxFrameBytes = 4 << 20
)

// Control message types (docs/backends.md#claude-channel-plugin-claude-experimental).
const (
	ControlContinue           = "continue"
	ControlAddContext         = "add_context"
	ControlRequestStatus      = "request_status"
	ControlCancel             = "cancel"
	ControlPermissionDecision = "permission_decision"
	ControlAgentMessage       = "agent_message"
)

// Auth is the credential part of every authenticated request body.
type Auth struct {
	RunID string `json:"run_id"`
	Token string `json:"token"`
}

// credentials lets the broker's handlers authenticate any request body
// that embeds Auth.
func (a *Auth) credentials() *Auth { return a }

// RegisterRequest is the sidecar announcing itself (POST /register).
type RegisterRequest struct {
	Auth
	PID int `json:"pid,omitempty"`
}

// Control is one control message queued for a run's sidecar.
type Control struct {
	ID        string          `json:"ctrl_id"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	FromRunID string          `json:"from_run_id,omitempty"`
}

// PushRequest queues a control message (POST /push-control).
type PushRequest struct {
	Auth
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	FromRunID string          `json:"from_run_id,omitempty"`
}

// PollRequest takes the queued control messages (POST /poll-control),
// waiting up to WaitMS (≤ MaxPollWait) for one to arrive.
type PollRequest struct {
	Auth
	WaitMS int `json:"wait_ms,omitempty"`
}

// PollResponse is what /poll-control answers.
type PollResponse struct {
	Messages []Control `json:"messages"`
}

// ReportRequest is avenor_report (POST /report).
type ReportRequest struct {
	Auth
	State   string          `json:"state"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// FinishRequest is avenor_finish (POST /finish).
type FinishRequest struct {
	Auth
	Status       string          `json:"status"`
	Summary      string          `json:"summary"`
	FilesChanged []string        `json:"files_changed,omitempty"`
	Details      json.RawMessage `json:"details,omitempty"`
}

// ReplyRequest is avenor_reply (POST /reply).
type ReplyRequest struct {
	Auth
	To      string          `json:"to"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// SendRequest is avenor_send / avenor_upsend (POST /send).
type SendRequest struct {
	Auth
	ToRunID string `json:"to_run_id"`
	Message string `json:"message"`
	Role    string `json:"role,omitempty"`
	Up      bool   `json:"up,omitempty"` // avenor_upsend
}

// PermissionRequest is Claude's channel permission prompt, forwarded by
// the sidecar (POST /permission_request).
type PermissionRequest struct {
	Auth
	RequestID    string `json:"request_id"`
	ToolName     string `json:"tool_name"`
	Description  string `json:"description"`
	InputPreview string `json:"input_preview"`
}

// PermissionAnswer decides a pending permission request (POST
// /permission); the broker queues it as a permission_decision control.
type PermissionAnswer struct {
	Auth
	RequestID string `json:"request_id"`
	Behavior  string `json:"behavior"` // allow | deny
}

// PermissionDecision is the payload of a permission_decision control.
type PermissionDecision struct {
	RequestID string `json:"request_id"`
	Behavior  string `json:"behavior"`
}

// SessionInfo is one run in GET /sessions.
type SessionInfo struct {
	RunID         string    `json:"run_id"`
	Registered    bool      `json:"registered"`
	LastHeartbeat time.Time `json:"last_heartbeat,omitzero"`
	Queued        int       `json:"queued"`
	Finished      bool      `json:"finished"`
}

// errorBody is every error answer: {"error": "..."}.
type errorBody struct {
	Error string `json:"error"`
}

// Valid enums of the tools (docs/backends.md#claude-channel-plugin-claude-experimental).
var (
	ReportStates   = []string{"started", "thinking", "working", "blocked", "checkpoint", "permission_requested", "error"}
	FinishStatuses = []string{"done", "failed", "blocked"}
)
