package runtime

import (
	"context"

	"github.com/hashicorp/go-hclog"
)

// Backend is one runtime family member, e.g. "opencode-acp". A plugin process
// may serve several.
type Backend interface {
	// Info describes the backend: name, capabilities, thinking levels, events.
	Info() BackendInfo
	// Check says whether the runtime is usable here without starting a turn.
	Check(ctx context.Context, req CheckRequest) Readiness
	// Open starts (or resumes) a session. The Host stays valid until the
	// session is closed. Open returns an *Error to say whose fault a failure is.
	Open(ctx context.Context, req OpenRequest, host Host) (Session, error)
}

// Session is one conversation with a runtime.
type Session interface {
	// ID is the runtime's session id (what --resume takes).
	ID() string
	// Process names the runtime process; zero when there is none.
	Process() ProcessInfo
	// Prompt runs one turn and returns when it ends. Events are emitted
	// through the Host while it runs. Prompt must return promptly after
	// Cancel (with StopReason "cancelled") or when ctx is done.
	Prompt(ctx context.Context, turn Turn) (TurnResult, error)
	// Cancel asks the turn in flight to stop. It does not wait for it. It
	// runs concurrently with Prompt and may arrive before Prompt has set up
	// its work: a backend must remember a cancel for the turn that is
	// starting. (The host kills a plugin whose turn has not ended within its
	// cancel budget, 5 s.)
	Cancel(ctx context.Context) error
	// Close ends the session and stops every process it started.
	Close(ctx context.Context) error
}

// Host is what a session may call back into.
type Host interface {
	// Emit records one event. Events keep the order of Emit calls. Emit
	// queues (bounded; it blocks when the host falls behind): events still
	// queued when the plugin process dies are lost with it.
	Emit(ev Event)
	// AskPermission raises a permission request and blocks until the host's
	// broker decides or ctx is done. The request is recorded in event order
	// before it blocks, so it never overtakes the tool call it belongs to.
	AskPermission(ctx context.Context, req PermissionRequest) (PermissionDecision, error)
	// Logger is the plugin's logger; on the host side it is named after the
	// plugin.
	Logger() hclog.Logger
}

// PermissionRecorder is an optional Host extension that the avenor host
// implements: RecordPermission registers and announces a request
// synchronously, in stream order, and returns a function that waits for the
// decision. sdk/plugin uses it so that later events never overtake a
// permission request while its answer is pending.
type PermissionRecorder interface {
	RecordPermission(ctx context.Context, req PermissionRequest) (wait func(ctx context.Context) (PermissionDecision, error))
}

// ProcessRecorder is an optional Host extension: sessions whose runtime
// process changes after Open (a restart, a resume in a new process) report it
// so the host can kill the right process group if the plugin dies.
type ProcessRecorder interface {
	RecordProcess(p ProcessInfo)
}

// TurnStarter is an optional Session extension: sdk/plugin calls
// TurnStarting as soon as the host's Prompt arrives, before Prompt runs,
// in the order of the host's messages, so that a Cancel sent right after
// the Prompt is kept for that turn even when it reaches the session before
// Prompt has begun. sdk/turn's Runner implements it.
type TurnStarter interface {
	TurnStarting()
}

// StartFielder is an optional Session extension: extra fields the host adds
// to the session.start event (e.g. claude's dangerously_load).
type StartFielder interface {
	StartFields() map[string]any
}

// DeliveryReporter is an optional Host extension: sdk/plugin tells the host
// when a permission decision did not reach the plugin (DeliveryNotSent: the
// send failed) or may not have (DeliveryPossiblySent: sent, then the plugin
// died before its turn ended), so the user learns what the runtime may or may
// not have done. Nothing is ever retried or allowed in its place.
type DeliveryReporter interface {
	PermissionUndelivered(requestID string, d PermissionDecision, delivery string, cause error)
}

// Delivery states of a permission decision that was not surely delivered.
const (
	DeliveryNotSent      = "not_sent"
	DeliveryPossiblySent = "possibly_sent"
)

// OpenRequest is everything a backend needs to open a session.
type OpenRequest struct {
	Backend string
	Dir     string // absolute working directory
	// DirExplicit: the user chose Dir (--dir, a spawn's dir) rather than
	// taking the working directory by default.
	DirExplicit     bool
	Model           string
	Agent           string
	Thinking        string // one of BackendInfo.ThinkingLevels, or empty
	ResumeSessionID string // empty: new session
	ServerURL       string
	Env             map[string]string // extra runtime environment; may hold secrets
	Options         map[string]any    // [backends.<name>].options
	StateDir        string            // plugin state directory kept across processes
	RunID           string
	// PermissionMode is what the session's turns may do without asking;
	// empty: the runtime's own behaviour, exactly as without a mode. A
	// backend refuses (FaultUser, CodeUnsupported) a mode it does not
	// declare (ModeCapability).
	PermissionMode PermissionMode
	// Launch is the session's standing instructions, tool list and MCP
	// servers; zero asks for nothing. A backend refuses a field it does
	// not declare (CheckLaunch).
	Launch LaunchContext
	// Sandbox is the boundary the runtime is launched inside; inactive
	// launches it as always. A backend that does not declare CapSandbox
	// refuses an active one (CheckSandbox); one that does launches its
	// runtime inside it (agentproc.Spec.Sandbox) or fails.
	Sandbox Sandbox
	// Questions: the run hears the runtime's own questions (CapQuestions,
	// QuestionAsker). False keeps what the runtime asks handled as it was
	// before questions existed (a permission, a refusal…).
	Questions bool
}

// Turn is one prompt.
type Turn struct {
	ID   string
	Text string
	// Images go with the text (CapImages); the host sends none to a
	// backend that does not declare it.
	Images []Image
	// Compact asks for a compaction of the session's context in place of
	// a prompt (CapCompaction, Compactor); Text and Images are empty.
	Compact bool
}

// Usage is token accounting in the contract's snake_case vocabulary.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	CachedReadTokens int64 `json:"cached_read_tokens"`
}

// TurnResult is how a turn ended.
type TurnResult struct {
	StopReason StopReason // see the StopReason constants
	Usage      *Usage
	// FinalOutput is the turn's answer. When HasFinalOutput is false the host
	// synthesises it from the message chunks since the last tool call.
	FinalOutput    string
	HasFinalOutput bool
	// Extra fields for the session.end event (e.g. pi's error_message).
	Extra map[string]any
	// SessionID when the turn changed the session id; usually empty.
	SessionID string
}

// ProcessInfo names a runtime process.
type ProcessInfo struct {
	PID     int
	PGID    int
	Binary  string
	Version string
}

// CheckRequest asks whether a backend is usable.
type CheckRequest struct {
	Backend string
	Env     map[string]string
	Options map[string]any
}

// Readiness is the answer to Check.
type Readiness struct {
	Ready   bool
	Binary  string
	Version string
	Auth    string // "ok", "missing", "unknown" or empty
	Message string // what is wrong and how to fix it
}

// StopReason is how a turn ended: session.end's stop_reason (docs/events.md#sessionend).
// It is a defined type so that a turn's outcome is spelled with the
// constants below rather than with any string; it marshals to JSON as the
// plain string it holds. A backend that meets a stop reason of its runtime
// docs/events.md#sessionend does not name maps it to the nearest constant (StopEndTurn
// for a normal end, StopError for a failure).
type StopReason string

// String returns the stop reason as session.end spells it ("end_turn", ...).
func (r StopReason) String() string { return string(r) }

// Stop reasons of the contract (docs/events.md#sessionend).
const (
	StopEndTurn         StopReason = "end_turn"
	StopMaxTokens       StopReason = "max_tokens"
	StopMaxTurnRequests StopReason = "max_turn_requests"
	StopRefusal         StopReason = "refusal"
	StopCancelled       StopReason = "cancelled"
	StopCancelledForced StopReason = "cancelled_forced"
	StopTimeout         StopReason = "timeout"
	StopProgressTimeout StopReason = "progress_timeout"
	StopError           StopReason = "error"
	StopSessionConflict StopReason = "session_id_conflict"
	StopStopSequence    StopReason = "stop_sequence"
	StopToolUse         StopReason = "tool_use"
	// StopBlocked: the agent gave up, blocked (claude-channel's
	// avenor_finish, a loop's abort marker); exit code 5.
	StopBlocked StopReason = "blocked"
)
