package event

import sdk "github.com/avenor-go/avenor/sdk/runtime"

// Event types the host emits itself, named once in sdk/runtime for host and
// plugins alike. Plugin events (agent.message_chunk, tool.call,
// avenor.native…) are not listed: they pass through unchanged.
const (
	TypeSessionStart       = sdk.EventSessionStart
	TypeSessionEnd         = sdk.EventSessionEnd
	TypeTurnStart          = sdk.EventTurnStart
	TypeAgentStatus        = sdk.EventAgentStatus
	TypeRetry              = sdk.EventRetry
	TypeError              = sdk.EventError
	TypeWarning            = sdk.EventWarning
	TypePermissionRequest  = sdk.EventPermissionRequest
	TypePermissionResponse = sdk.EventPermissionResponse
	TypeSubscriberLagged   = sdk.EventSubscriberLagged
	TypeLoopStart          = sdk.EventLoopStart
	TypePhaseStart         = sdk.EventPhaseStart
	TypePhaseEnd           = sdk.EventPhaseEnd
	TypeLoopEnd            = sdk.EventLoopEnd
	TypeTeamStart          = sdk.EventTeamStart
	TypeTeamEnd            = sdk.EventTeamEnd
	TypeChildQuestion      = sdk.EventChildQuestion
	TypeQuestionRequest    = sdk.EventQuestionRequest
	TypeQuestionResponse   = sdk.EventQuestionResponse
)

// TypeSupervisorReattached: avenor stable took a runtime's session over
// from a plugin that outlived the supervisor before it (docs/stable.md#surviving-a-restart).
const TypeSupervisorReattached = sdk.EventSupervisorReattached

// TypeRestarted: a runtime's run went on in a fresh plugin process on the
// same session (host/run's Runtime.Restart).
const TypeRestarted sdk.EventType = "avenor.restarted"

// TypeWatchdog: the turn watchdog fired (docs/unattended.md).
const TypeWatchdog sdk.EventType = "avenor.watchdog"

// TypeSandboxDenied: the sandbox refused an access a tool made, or could
// not be set up (docs/sandbox.md#denials).
const TypeSandboxDenied sdk.EventType = "avenor.sandbox.denied"

// TypeSandboxWidened: a person approved widening the sandbox after a
// denial, and the run goes on widened (docs/sandbox.md#recovery).
const TypeSandboxWidened sdk.EventType = "avenor.sandbox.widened"

// TypeRateLimitWait: a run with --wait-on-rate-limit waits for a rate
// limit's reset (docs/unattended.md#rate-limits).
const TypeRateLimitWait sdk.EventType = "avenor.rate_limit.wait"

// TypeBudgetReached: a spend limit was reached; the turn ends
// budget_reached (docs/unattended.md#spend-limits).
const TypeBudgetReached sdk.EventType = "avenor.budget.reached"

// TypeContext: the context window's use after a turn
// (docs/unattended.md#context-use).
const TypeContext sdk.EventType = "avenor.context"

// TypeContextCompacted: the runtime compacted its context at a turn
// boundary (--auto-compact-pct; docs/unattended.md#context-use).
const TypeContextCompacted sdk.EventType = "avenor.context.compacted"

// Plugin event types the host reads (final output synthesis, docs/events.md#the-envelope).
const (
	TypeMessageChunk = sdk.EventMessageChunk
	TypeThoughtChunk = sdk.EventThoughtChunk
	TypeToolCall     = sdk.EventToolCall
)

// EventType documents one event type: its name, what it means, and the
// fields it carries beyond the envelope (event, seq, ts, run_id, run_label,
// runtime_id, session_id).
type EventType struct {
	Name sdk.EventType
	Doc  string
	// Fields are always present.
	Fields []string
	// Optional fields are present only in the situations Doc describes.
	Optional []string
}

// HostEventTypes lists every event type the host itself emits, in the
// vocabulary of docs/events.md and docs/loop.md#lifecycle-events. The docs are generated from it and
// a test keeps IsHostEvent in step with it. Treat it as read-only.
var HostEventTypes = []EventType{
	{
		Name:     TypeSessionStart,
		Doc:      "A session opened: the first event of every attempt. Plugins may add backend-specific fields (claude: dangerously_load; claude-channel: broker_url). With --permission-mode, permission_mode and permission_allows {edits, commands: allow|ask|deny}; with the launch context, append_system_prompt_length (bytes), allowed_tools and mcp_servers (names only); with --sandbox, sandbox {mechanism, profile, network}.",
		Fields:   []string{"backend", "dir", "plugin", "plugin_version", "protocol_version"},
		Optional: []string{"dangerously_load", "broker_url", "permission_mode", "permission_allows", "append_system_prompt_length", "allowed_tools", "mcp_servers", "sandbox"},
	},
	{
		Name:     TypeSessionEnd,
		Doc:      "A session ended: always the last event of a session. The log keeps the complete final_output; control views bound it to 4096 runes and set final_output_truncated. A turn that failed on a rate limit adds error_code rate_limited and, when the runtime said, rate_limited_until (RFC 3339).",
		Fields:   []string{"stop_reason"},
		Optional: []string{"usage", "final_output", "final_output_truncated", "status", "summary", "files_changed", "error", "error_message", "error_code", "rate_limited_until"},
	},
	{
		Name:   TypeTurnStart,
		Doc:    "A turn is about to be prompted. turn is the 1-based number of the turn within the run; prompt_length is the length of the prompt text in bytes.",
		Fields: []string{"turn", "prompt_length"},
	},
	{
		Name:     TypeAgentStatus,
		Doc:      "The agent's coarse phase changed (thinking, working, waiting, done); emitted before the event that caused it. source is avenor for synthesized changes, agent for status markers.",
		Fields:   []string{"phase", "source"},
		Optional: []string{"label"},
	},
	{
		Name:   TypeRetry,
		Doc:    "A failed attempt is being retried; attempt is the number of the attempt about to run (first retry: 2).",
		Fields: []string{"attempt", "max_retries"},
	},
	{
		Name:     TypeError,
		Doc:      "Something failed that the harness should see; source says where (permission, cancel, backend, loop, prompt, event_log: the --on-event log could not be written and the run ends…). The degenerate-stream variant adds kind, stop_reason, model and diagnostics. A permission decision that did not surely reach a plugin that died adds request_id, option_id, outcome and delivery (not_sent or possibly_sent). A turn that failed on a rate limit adds code rate_limited and, when the runtime said, rate_limited_until (RFC 3339).",
		Fields:   []string{"source", "message"},
		Optional: []string{"kind", "stop_reason", "model", "diagnostics", "request_id", "option_id", "outcome", "delivery", "code", "rate_limited_until"},
	},
	{
		Name:     TypeWarning,
		Doc:      "Something was ignored or degraded but the run goes on (e.g. --model on a backend that cannot select models). dropped counts the events a plugin could not keep while its supervisor was gone (avenor stable --linger).",
		Fields:   []string{"source", "message"},
		Optional: []string{"dropped", "used_pct"},
	},
	{
		Name:   TypeSupervisorReattached,
		Doc:    "avenor stable, started after its predecessor on the same socket died, took this runtime's session over from the plugin that kept it (docs/stable.md#surviving-a-restart): buffered events the plugin kept follow, gap_ms is how long the runtime had no supervisor. A turn in flight goes on.",
		Fields: []string{"buffered", "gap_ms"},
	},
	{
		Name:   TypeRestarted,
		Doc:    "The run's plugin process was stopped and the run goes on in a fresh one, resuming the same session (a watchdog's restart, a sandbox widened after an approval): the stopped turn has no session.end; the fresh turn's session.start follows. reason says why; attempt counts the run's restarts (first: 1).",
		Fields: []string{"reason", "attempt"},
	},
	{
		Name:     TypeWatchdog,
		Doc:      "The turn watchdog fired (--watchdog, docs/unattended.md): kind tool (a tool call whose own process subtree gained neither CPU nor I/O past --tool-timeout; tool is its toolCallId) or progress (no event for --progress-timeout, or for --tool-timeout while a tool call with no process of its own runs). action is what follows: warn (the turn goes on), cancel (the turn ends cancelled) or restart (a fresh turn on the same session; restart counts them, restarts_exhausted says they were used up and the turn is cancelled instead). evidence holds the last events, the tool call and its subtree with CPU and I/O gained over the window, the tool calls in flight and the plugin's stderr tail, each bounded (docs/configuration.md#bounds).",
		Fields:   []string{"kind", "idle_for_ms", "action", "evidence"},
		Optional: []string{"tool", "restart", "restarts_allowed", "restarts_exhausted"},
	},
	{
		Name:     TypeSandboxDenied,
		Doc:      "A sandboxed run only (--sandbox): the boundary refused an access, as a tool's output shows it (op write: a path outside the writable paths, with EROFS, EACCES or EPERM; op read: a path on the deny list; tool is the tool call's toolCallId), or bubblewrap could not set the boundary up (op launch: path is the path it named, or bwrap; message is its own line). Emitted right after the tool.call_update that showed it; each op and path once per tool call, bounded (docs/configuration.md#bounds). With --sandbox-network model or allow=…: op connect, destination host:port, a connection the filtering proxy refused (docs/sandbox.md#network), each destination once per attempt; such an event has no path.",
		Fields:   []string{"op"},
		Optional: []string{"path", "destination", "tool", "message"},
	},
	{
		Name:     TypeSandboxWidened,
		Doc:      "A run with --sandbox-recover only (docs/sandbox.md#recovery): a person approved the permission request of kind sandbox raised after a denial, and the sandbox is widened by exactly that one thing: op write with path (the denied path) and allow_write (what became writable: the path, or its directory when the step meant to create it), or op connect with destination. avenor.restarted (reason sandbox_widened) follows, then the fresh turn's session.start on the same session.",
		Fields:   []string{"op", "session_id"},
		Optional: []string{"path", "allow_write", "destination"},
	},
	{
		Name:     TypeRateLimitWait,
		Doc:      "The turn failed on a rate limit and, with --wait-on-rate-limit (docs/unattended.md#rate-limits), waits instead of ending: at until (RFC 3339, absent when the runtime did not say: a minute) plus jitter the same session is sent the turn's prompt again. attempt counts the run's resumes (first: 1), at most max_resumes; message is the runtime's. Only in runs that asked.",
		Fields:   []string{"attempt", "max_resumes", "message"},
		Optional: []string{"until"},
	},
	{
		Name:     TypeBudgetReached,
		Doc:      "A spend limit was reached (--spend-tokens, --spend-usd, --spend-wall; docs/unattended.md#spend-limits); only in a run that set one. limit names it (tokens, usd or wall); the spent_* fields are what the limits count (scope runtime or tree), the spend_* fields the limits set. The session.end that follows says budget_reached (exit 5, sentinel BLOCKED): at the turn's boundary under policy finish; for a wall limit under interrupt, the turn was cancelled. In avenor stable the runtime parks idle until set_budget raises the limit.",
		Fields:   []string{"limit", "policy", "scope", "spent_tokens", "spent_usd", "spent_wall_ms"},
		Optional: []string{"spend_tokens", "spend_usd", "spend_wall_ms"},
	},
	{
		Name:   TypeContext,
		Doc:    "The context window's use after a turn, where the runtime reports it and the run asked (--context-warn-pct; docs/unattended.md#context-use): used_tokens of window_tokens, used_pct rounded to one decimal. At or past the threshold an avenor.warning {source: context, used_pct} follows: the first such turn of a run, and again once the window fell below it.",
		Fields: []string{"used_tokens", "window_tokens", "used_pct"},
	},
	{
		Name:     TypeContextCompacted,
		Doc:      "The runtime compacted its context natively at a turn boundary, after a turn whose context use reached --auto-compact-pct (docs/unattended.md#context-use); only in a run that asked. before_tokens is the use the turn reported, after_tokens the use after the compaction where the runtime says it, window_tokens the window. It follows the turn's avenor.context, before its session.end; the next turn runs on the compacted session. A compaction that fails is an avenor.warning {source: context} instead, and the run goes on.",
		Fields:   []string{"before_tokens", "window_tokens"},
		Optional: []string{"after_tokens"},
	},
	{
		Name:     TypePermissionRequest,
		Doc:      "The agent asks for permission; raw backend fields pass through beside these. requires_user_input requests are never auto-approved.",
		Fields:   []string{"request_id", "tool", "question", "options", "resolver"},
		Optional: []string{"requires_user_input", "kind", "input", "ui_request_id"},
	},
	{
		Name:     TypePermissionResponse,
		Doc:      "A permission request was decided; source is avenor (auto-approve, --on-permission deny or fail), control, board (answered on avenor board), file, or tty (answered at the run's terminal), or mode (the run's --permission-mode decided, before every other resolver; permission_mode names it). outcome is set (cancelled) when the answer cancelled the run.",
		Fields:   []string{"request_id", "option_id", "kind", "source"},
		Optional: []string{"outcome", "permission_mode"},
	},
	{
		Name:     TypeQuestionRequest,
		Doc:      "The runtime asks the user something (a backend that declares questions): prompts is [{question, options?, multi?, header?}]; raw backend fields pass through beside these. resolver says what is set up to answer (control, file, none); timeout_ms is how long it waits before the runtime is told there is no answer. Answer it with answer_question.",
		Fields:   []string{"request_id", "prompts", "resolver", "timeout_ms"},
		Optional: []string{"tool", "kind", "input"},
	},
	{
		Name:     TypeQuestionResponse,
		Doc:      "A question was answered (answered true: answers holds one list of values per prompt) or given up (answered false: reason timeout, when nothing answered within its bound, or ended, when its turn ended first). source is control, board, mcp, file or avenor (given up).",
		Fields:   []string{"request_id", "answered", "source"},
		Optional: []string{"answers", "reason"},
	},
	{
		Name:   TypeSubscriberLagged,
		Doc:    "Control-plane only, never in the log: this subscriber's queue overflowed and dropped_count of its oldest events were dropped. It carries no seq.",
		Fields: []string{"dropped_count"},
	},
	{
		Name:     TypeLoopStart,
		Doc:      "A phase loop started. post_phase_count only when the config has post phases.",
		Fields:   []string{"max_iterations", "pre_phase_count", "loop_phase_count"},
		Optional: []string{"post_phase_count"},
	},
	{
		Name:   TypePhaseStart,
		Doc:    "A loop or team phase started; kind is pre, loop, team or post (team runs use iteration 0).",
		Fields: []string{"phase", "iteration", "kind"},
	},
	{
		Name:     TypePhaseEnd,
		Doc:      "A loop or team phase ended; session_id is the phase's session. Marker fields only when the phase ended naturally (end_turn) with an exit or abort marker (abort wins over exit).",
		Fields:   []string{"phase", "iteration", "stop_reason"},
		Optional: []string{"kind", "exit_marker", "exit_marker_label", "abort_marker", "abort_marker_label"},
	},
	{
		Name:     TypeLoopEnd,
		Doc:      "A phase loop ended; exit_reason is marker, abort, max_iterations, phase_failure, cancelled, timeout or end_turn; exit_label only for marker and abort. exit_phase, exit_phase_kind and exit_iteration name the phase that decided the end (marker, abort, phase_failure).",
		Fields:   []string{"iterations_completed", "exit_reason"},
		Optional: []string{"exit_label", "exit_phase", "exit_phase_kind", "exit_iteration"},
	},
	{
		Name:   TypeTeamStart,
		Doc:    "A team run started.",
		Fields: []string{"pre_phase_count", "team_member_count", "post_phase_count"},
	},
	{
		Name:     TypeTeamEnd,
		Doc:      "A team run ended; exit_reason is end_turn, abort, phase_failure, pre_failure, post_failure, cancelled or timeout. exit_phase and exit_phase_kind name the phase that decided the end; members_skipped lists the conditional members a skip marker removed.",
		Fields:   []string{"exit_reason", "members_completed", "members_aborted"},
		Optional: []string{"exit_label", "exit_phase", "exit_phase_kind", "members_skipped"},
	},
	{
		Name:   TypeChildQuestion,
		Doc:    "A stable child sent its parent a message (send_to_parent); runtime_id is the parent's.",
		Fields: []string{"runtime_id", "session_id", "child_id", "message", "request_id"},
	},
}

// IsHostEvent reports whether the host itself emits events of type name.
func IsHostEvent(name sdk.EventType) bool {
	for _, t := range HostEventTypes {
		if t.Name == name {
			return true
		}
	}
	return false
}
