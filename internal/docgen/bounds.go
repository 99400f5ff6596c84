package docgen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Bound is one documented limit: an exported constant, found by parsing
// its package's source (so the docs need no import of packages other
// developers are changing), and what it bounds.
type Bound struct {
	Dir   string // package directory, relative to the repository root
	Name  string // the constant
	Scope string // where the bound applies
	Means string
}

// Bounds is the bounds table of configuration.md. A constant listed here
// that disappears or stops being a simple expression fails `make docs` and
// the drift test, so the table cannot silently go stale.
var Bounds = []Bound{
	{"host/control", "MaxRequestLine", "control socket", "longest request line; a longer one is answered `-32600` and its connection closed"},
	{"host/control", "MaxPendingRequestBytes", "control socket", "request lines not finished yet, all connections together (above the 64 KiB reader and 64 KiB line buffer each connection keeps); a connection whose line would pass it is answered `-32000` and closed"},
	{"host/control", "ReturnMemoryAfter", "control socket", "bytes of long-line buffers let go of before the memory is handed back to the system (a full collection, at most once per second, `control.ReturnMemoryInterval`)"},
	{"host/control", "DefaultHistoryLimit", "control `history`, `subscribe` replay", "events returned when `limit` is absent"},
	{"host/control", "MaxHistoryLimit", "control `history`, `subscribe` replay", "largest `limit` honoured"},
	{"host/control", "MaxConnections", "control socket", "open connections; one more gets a -32000 error line and is closed"},
	{"host/control", "ReservedConnections", "control socket", "connections of `control.MaxConnections` one peer process (its pid, `SO_PEERCRED`) cannot take: they are kept for the owner and other clients"},
	{"host/control", "MaxConnectionsPerProcess", "control socket", "open connections of one peer process (`MaxConnections` − `ReservedConnections`); one more gets a -32000 error line and is closed"},
	{"host/control", "AcceptBackoffMin", "control socket", "first pause after a failed accept (EMFILE); it doubles per failure"},
	{"host/control", "AcceptBackoffMax", "control socket", "longest pause between failed accepts"},
	{"host/control", "AcceptLogInterval", "control socket", "failed accepts and refused connections are logged at most once per interval"},
	{"host/control/httpdebug", "ReadHeaderTimeout", "`--http-debug`", "time for a request's headers"},
	{"host/control/httpdebug", "IdleTimeout", "`--http-debug`", "an idle keep-alive connection is closed after it"},
	{"host/control/httpdebug", "MaxConnections", "`--http-debug`", "open connections; one more is answered 503 and closed"},
	{"host/control", "LockWait", "control socket start and stop", "wait for `<socket>.control.lock` before failing with an error naming its holder"},
	{"host/fleet", "ConnectTimeout", "fleet (`--fleet`, `--nats`)", "dialling the NATS servers and the first JetStream answer"},
	{"host/fleet", "SetupTimeout", "fleet (`--fleet`, `--nats`)", "retrying the set-up of the fleet's streams and buckets while the cluster elects its JetStream leader"},
	{"host/fleet", "SpawnAckWait", "fleet node", "a spawn neither acked nor heartbeated this long is redelivered to another node"},
	{"host/fleet", "HeartbeatInterval", "fleet node", "in-progress acks of a spawn while its runtime starts"},
	{"host/fleet", "PresenceInterval", "fleet node", "refresh of the node's presence key"},
	{"host/fleet", "PresenceTTL", "fleet node", "a node silent this long is lost; its runtimes move"},
	{"host/fleet", "ReapInterval", "fleet node", "how often a node looks for runtimes of lost nodes"},
	{"host/fleet", "PullWait", "fleet node", "one pull of the spawn queue and one capacity wait"},
	{"host/fleet", "SpawnsInFlight", "fleet node", "spawns a node takes from the queue and starts at once, never more than its free slots"},
	{"host/fleet", "ReapRescan", "fleet node", "the whole registry is read for runtimes to move at least this often, and at once when a node is lost or comes back"},
	{"host/fleet", "PermissionMoveWait", "`avenor fleet serve`", "an answer to a pending permission of a moving runtime waits this long for the new node to raise it again"},
	{"host/fleet", "RPCTimeout", "`avenor fleet serve`", "one call routed to the owning node"},
	{"host/fleet", "ReadAttemptTimeout", "`avenor fleet serve`", "one try of a read-only routed call (status, result, history, list); a try whose reply was lost with a NATS server is sent again"},
	{"host/fleet", "ReplyKeep", "`avenor fleet serve`", "a spawn's answer is kept in the replies bucket this long, for a requester whose connection was away when it was published"},
	{"host/fleet", "ReplyCheckFirst", "`avenor fleet serve`", "a waiting spawn first reads the replies bucket after this long (and at once after a reconnect)"},
	{"host/fleet", "ReplyCheckMax", "`avenor fleet serve`", "the most between a waiting spawn's reads of the replies bucket (the wait doubles up to it)"},
	{"host/fleet", "DefaultSpawnTimeout", "`avenor fleet serve --spawn-timeout`", "how long a spawn waits for a node of its pool to start it"},
	{"host/fleet", "DefaultEventsMaxAge", "fleet `--events-max-age`", "age bound of the events stream"},
	{"host/fleet", "DefaultEventsMaxBytes", "fleet `--events-max-bytes`", "size bound of the events stream"},
	{"host/fleet", "DedupeWindow", "fleet streams", "duplicate window: a republished event or spawn within it is stored once"},
	{"host/fleet", "PublishWindow", "fleet node", "event publishes a node has in flight at once, one per runtime so each runtime's order holds"},
	{"host/fleet", "RegistryRetry", "fleet node", "retries of a registry write across a lost NATS server"},
	{"host/fleet", "DevReadyTimeout", "`avenor fleet dev`", "wait for the embedded server to accept connections"},
	{"host/board", "DialTimeout", "`avenor board`", "dialling a control socket and each call a route makes; a socket slower than this is left out of /api/sockets and is a 502 elsewhere"},
	{"host/plugins", "NamesTimeout", "shell completion of `--backend`", "starting and asking every plugin found for its backends; a plugin slower than this is left out"},
	{"host/board", "MaxStreams", "`avenor board`", "open /api/events streams (each holds a control connection); one more is answered 503"},
	{"host/board", "MaxBodyBytes", "`avenor board`", "a POST body"},
	{"host/board", "MaxSockets", "`avenor board`", "sockets /api/sockets reports, in name order (the header X-Avenor-Sockets-Left-Out counts the rest)"},
	{"host/board", "StreamKeepAlive", "`avenor board`", "an idle event stream sends a comment this often"},
	{"host/board", "DefaultStallAfter", "`avenor board --stall-after`", "a running runtime without a new event for this long is marked waiting for you"},
	{"host/board", "MaxConnections", "`avenor board`", "HTTP connections open at once, counted before any request or token (one more is answered 503 and closed)"},
	{"host/board", "MaxConnectionsPerPeer", "`avenor board`", "HTTP connections of one other local user (loopback peers, uid from the kernel)"},
	{"host/board", "ReservedConnections", "`avenor board`", "of `board.MaxConnections`, slots only the user who started the board may take"},
	{"host/board", "ReadHeaderTimeout", "`avenor board`", "time for a request's headers"},
	{"host/board", "IdleTimeout", "`avenor board`", "an idle keep-alive connection is closed after it"},
	{"host/board", "LeftoverAge", "`avenor board`", "an ended supervisor's `.control.lock`, `.start.lock` and `.dead` in a scanned directory are removed once this old (the socket gone or refusing)"},
	{"host/suprecord", "MaxRecords", "supervisor records (`$XDG_STATE_HOME/avenor/supervisors`)", "records of running supervisors the board lists"},
	{"host/event", "DefaultHistory", "event history per runtime", "events kept in memory for `history` and replay (the NDJSON file keeps all)"},
	{"host/event", "DefaultQueue", "each subscription", "queued events before the oldest is dropped and `subscriber.lagged` sent"},
	{"host/event", "IdleWriterBytes", "event stream per runtime", "heap a parked runtime's event stream holds after a turn of ordinary events: its 256-event history as compact lines (the repeated envelope members kept once) and one drained subscriber; nothing is preallocated, and buffers sized for a burst are given back when the runtime is parked or ends (tested, not enforced)"},
	{"host/event", "IdleSubscriptionBytes", "each subscription", "heap of a subscription with nothing queued: its queue grows with the traffic up to `event.DefaultQueue` and is given back once drained (tested, not enforced)"},
	{"host/event", "MaxQueuedLogBytes", "event log (`--on-event`, `on_event`)", "bytes of events queued for the log; a Write waits for room (never holding up control) rather than growing memory"},
	{"host/event", "MaxQueuedLogBytesTotal", "event logs, all runtimes of a process", "bytes of events queued for all the logs together; past it, a runtime whose own queue holds more than `event.MinQueuedLogBytes` waits for room (hundreds of runtimes on a supervisor that falls behind no longer queue a MiB each)"},
	{"host/event", "MinQueuedLogBytes", "event log (`--on-event`, `on_event`)", "bytes of events each runtime may always queue for its log, whatever the others hold"},
	{"host/event", "MaxWriteStall", "event log (`--on-event`, `on_event`)", "longest a write to the log may block; past it the log is given up and the run ends `FAILED` with `avenor.error{source:\"event_log\"}`"},
	{"host/event", "FinalOutputLimit", "control views of `session.end`", "runes of `final_output` in status, history and notifications (`final_output_truncated` set); the log keeps it whole"},
	{"host/runner", "MaxQueuedPrompts", "one run", "prompts queued by `prompt` behind the turn in flight"},
	{"sdk/runtime", "MaxPromptBytes", "every prompt", "longest prompt in bytes (`--prompt`, `--prompt-file`, spawn `prompt`/`prompt_file`, phase prompts, control `prompt`, a restart's note): one gRPC message of at most 4 MiB carries it; a longer or non-UTF-8 one is refused before launch"},
	{"host/runner", "DefaultCancelBudget", "one run", "time a plugin gets to end a cancelled or timed-out turn"},
	{"host/runner", "CheckBudget", "one run", "readiness check after a session failed to open; a runtime that is not ready is not retried"},
	{"host/permission", "DefaultPollInterval", "file permission handler", "how often `<base>.req.response` is polled"},
	{"host/permission", "DefaultTimeout", "file permission handler", "how long a `.req` waits for its response before the attempt fails"},
	{"host/permission", "MaxMessageBytes", "permission answers", "longest `message` of an answer (file, socket or HTTP)"},
	{"host/permission", "AnswerSettle", "`answer_permission`", "an accepted answer returns once its `permission.response` is written, or after this long"},
	{"host/permission", "DefaultQuestionTimeout", "a runtime's question (`question.request`)", "how long it waits for an answer before the runtime is told there is none and goes on (`AVENOR_QUESTION_TIMEOUT` replaces it; `timeout_ms` in the event says it)"},
	{"host/permission", "MaxQuestionPrompts", "a runtime's question", "prompts one question may carry; one with more gets no answer and an `avenor.error`"},
	{"host/permission", "MaxAnswerValues", "question answers (`answer_question`, `.question.response`, `avenor answer --question`)", "values of one prompt's answer (a multi choice)"},
	{"host/permission", "MaxAnswerValueBytes", "question answers", "bytes of one value (a chosen option or free text)"},
	{"sdk/runtime", "MaxImages", "`--image`", "images sent with one prompt"},
	{"sdk/runtime", "MaxImageBytes", "`--image`", "size of one image file (checked, with its type by its first bytes, before anything starts)"},
	{"host/liveview", "DefaultQueue", "the live view (`--progress`)", "events queued for the view before the oldest are dropped with a note; the run never waits for it"},
	{"host/liveview", "FinishBudget", "the live view (`--progress`)", "wait for the view to catch up with the stream before the end summary"},
	{"host/liveview", "StatusTick", "the live view (`--progress=tty`)", "how often the status line's clock is redrawn"},
	{"host/liveview", "StallAfter", "the live view (`--progress=tty`)", "quiet time before the status line says what the turn waits for (the runtime's first reply); three times as long without an event mid-turn"},
	{"host/run", "MaxInlineLines", "a permission asked at the terminal", "lines typed ahead and held for the question that takes them; the reader waits beyond that"},
	{"cmd/avenor", "BackendsWidth", "`avenor backends`", "columns of the default table (`-o wide` and `--json` show everything)"},
	{"host/run", "MaxStdinPrompt", "`avenor run --prompt-file -`", "longest prompt read from stdin"},
	{"host/run", "MaxAllowedTools", "`--allowed-tools`", "tool names in the list"},
	{"host/run", "MaxToolName", "`--allowed-tools`", "bytes of one tool name"},
	{"host/run", "MaxMCPConfigBytes", "`--mcp-config`", "size of the MCP server definitions file"},
	{"host/run", "MaxMCPServers", "`--mcp-config`", "servers one file defines"},
	{"host/run", "MaxAllowedToolsParam", "spawn `allowed_tools`", "bytes of the param's JSON; its entries have `--allowed-tools`' bounds"},
	// The sandbox (docs/sandbox.md).
	{"sdk/runtime", "MaxNetworkAllow", "`--sandbox-network allow=…`", "entries of one allow-list (host, host:port or :port)"},
	{"host/sandbox", "MaxProxyConnections", "`--sandbox-network model`, `allow=…`", "connections one runtime's filtering proxy serves at once; one more is closed unanswered"},
	{"host/sandbox", "MaxProxyHeaderBytes", "`--sandbox-network model`, `allow=…`", "bytes of a request line and headers the filtering proxy reads; a longer request is answered 400"},
	{"host/sandbox", "ProxyHeaderTimeout", "`--sandbox-network model`, `allow=…`", "time a connection to the filtering proxy has to send its request"},
	{"host/sandbox", "ProxyDialTimeout", "`--sandbox-network model`, `allow=…`", "dialling an allowed destination from the filtering proxy"},
	{"host/sandbox", "MaxAllowWrite", "`--sandbox-allow-write`", "paths one run allows written besides `--dir`"},
	{"host/sandbox", "MaxDenyRead", "`--sandbox-deny-read`", "paths one run hides besides the default deny list"},
	{"host/sandbox", "CheckTimeout", "`--sandbox`", "time for the trial `bwrap --unshare-pid --ro-bind / / true` that checks bubblewrap can enforce a sandbox here"},
	{"host/sandbox", "MaxDenialScanBytes", "`avenor.sandbox.denied`", "bytes of one tool's output (or one launch error) read for denials; the rest is not read"},
	{"host/sandbox", "MaxDenialsPerOutput", "`avenor.sandbox.denied`", "denials one tool output (or one launch error) reports"},
	{"host/sandbox", "MaxDenialMessageBytes", "`avenor.sandbox.denied`", "a launch denial's `message`"},
	{"host/runner", "MaxDenialEvents", "`avenor.sandbox.denied`", "denial events one attempt of a run writes; later ones are not reported"},
	{"host/runner", "MaxSandboxRecoveries", "`--sandbox-recover`", "permission requests of kind `sandbox` one run raises, one per distinct path (across its restarts); later denials are not asked about"},
	{"host/runner", "SandboxRecoverWait", "`--sandbox-recover`", "wait, at the turn's end, for the answer to one request of kind `sandbox`; unanswered by then, it is taken as rejected"},
	{"host/run", "ListTimeout", "`avenor backends`", "time for one plugin to start and describe its backends"},
	{"host/run", "CatalogTimeout", "`avenor backends --models`", "time for one plugin to answer the catalogs of all its backends, after their checks; past it a backend's row keeps its readiness and says why in `models_error`"},
	{"sdk/runtime", "MaxModels", "`avenor backends --models`", "models listed per backend; more are left out (`models_truncated`)"},
	{"sdk/runtime", "MaxModelIDBytes", "`avenor backends --models`", "bytes of a model id or name; a longer id (or one with control characters) is left out, a longer name dropped"},
	{"sdk/runtime", "MaxCatalogMessage", "`avenor backends --models`", "bytes of `models_error` and `auth_message` (their first line)"},
	{"sdk/agentproc", "StatusTimeout", "`avenor backends --models`", "time for one runtime status command (`opencode models`, `claude auth status`, `pi --list-models`, ...); its whole process group is killed after it"},
	{"sdk/agentproc", "MaxStatusOutput", "`avenor backends --models`", "bytes kept of each of a status command's stdout and stderr; the rest is read and dropped"},
	{"host/run", "HTTPDebugDrain", "`--http-debug`", "wait at exit for the event streams to deliver the last events"},
	{"client", "AwaitPoll", "`avenor await`, `client.Await`", "how often the status is read again while a `session.end` settles"},
	{"client", "FindDialTimeout", "`avenor await`, `client.FindRuntime`", "time to dial and list one supervisor"},
	{"host/watch", "DefaultSettle", "`avenor watch --follow`", "wait with nothing new after a clean or cancelled `session.end` (no loop, team or `--sentinel-file`) before the run counts as over"},
	{"host/watch", "DefaultRetrySettle", "`avenor watch --follow`", "the same wait after a retryable failure, before the last attempt is known"},
	{"host/watch", "TranscriptLineRunes", "`avenor watch --format transcript`", "runes of a line other than the agent's own text"},
	{"host/watch", "MaxTranscriptTools", "`avenor watch --format transcript`", "tool titles remembered for their status updates (then forgotten all at once)"},
	{"host/permission", "MaxRememberedAnswers", "one runtime's permission broker", "answered request ids remembered, so a second `answer_permission` hears \"already answered\""},
	{"host/loop", "DefaultMaxIterations", "loop config", "`max_iterations` when absent or 0"},
	{"host/loop", "MaxIterationsLimit", "loop config", "largest `max_iterations` accepted"},
	{"host/loop", "DefaultMaxNudges", "phase `on_incomplete`", "`max_nudges` when absent"},
	{"host/stable", "StateSyncWait", "`avenor stable`", "a spawn, a run's first prompt and a follow-up wait this long at most for `state.json` to be written (then go on with a warning); a write that fails refuses the spawn or follow-up"},
	{"host/stable", "DefaultMaxRuntimes", "`avenor stable`", "`--max-runtimes` default: live runtimes before spawn is refused"},
	{"host/stable", "SoftMemoryBaseBytes", "`avenor stable`", "soft memory limit of the supervisor (Go's `runtime/debug.SetMemoryLimit`): this plus `stable.SoftMemoryBytesPerRuntime` for each runtime `--max-runtimes` admits; the collector works harder as memory nears it instead of letting the heap reach twice what is live; soft (a supervisor that needs more gets it); a `GOMEMLIMIT` in the environment replaces it"},
	{"host/stable", "SoftMemoryBytesPerRuntime", "`avenor stable`", "the soft memory limit's share per runtime `--max-runtimes` admits (16 runtimes: 51 MiB; 200: 89 MiB)"},
	{"host/stable", "DefaultMaxTreeBudget", "`avenor stable`", "runtimes in one parent/child tree (`tree_budget` capacity)"},
	{"host/stable", "DefaultParkedTimeout", "`avenor stable`", "how long an idle runtime keeps its session open for follow-ups"},
	{"host/stable", "DefaultWarmIdle", "`avenor stable --warm-idle`", "how long a warm pool nobody takes from keeps its runtimes"},
	{"host/stable", "MaxWarmPerPool", "`avenor stable --warm`", "runtimes one warm pool keeps"},
	{"host/stable", "WarmOpenBudget", "`avenor stable --warm`", "starting one warm runtime: plugin, CLI and session"},
	{"host/stable", "WarmRetryMin", "`avenor stable --warm`", "first backoff after a warm runtime failed to start or died young"},
	{"host/stable", "WarmRetryMax", "`avenor stable --warm`", "longest backoff of a failing warm pool"},
	{"host/stable", "DefaultShutdownTimeout", "`avenor stable`", "`--shutdown-timeout` default for a graceful shutdown"},
	{"sdk/plugin", "DefaultLinger", "`avenor stable --linger`", "how long a plugin keeps its runtime and session after its supervisor died, for one restarted on the same socket; then it stops them (0: at once, as `avenor run`)"},
	{"sdk/plugin", "MaxReplayEvents", "`avenor stable` restart", "events a re-attached plugin sends again, those it sent last before its supervisor died (at most 1 MiB); the new supervisor skips those its log has"},
	{"sdk/plugin", "StderrLineBuffer", "every plugin", "buffer the host reads a plugin's stderr with, for the plugin's life: a longer line is kept whole in the stderr tail but logged in pieces at debug level"},
	{"sdk/plugin", "ReceiveWindow", "every plugin", "bytes of events a plugin may send ahead of what its host has read (gRPC flow control, per session and per connection); then the plugin waits"},
	{"sdk/plugin", "MaxLingerBuffer", "`avenor stable --linger`", "bytes of events one lingering session keeps for the next supervisor; past it the oldest go and an `avenor.warning` says how many"},
	{"host/stable", "DefaultMaxKeptPlugins", "`avenor stable`", "parked runtimes keeping their plugin running (cross_process ones stop theirs first)"},
	{"host/run", "MaxRestarts", "one run", "restarts in a fresh plugin process on the same session (`avenor.restarted`); one more is refused"},
	{"host/run", "MaxRestartReason", "one run", "bytes of a restart's reason (`avenor.restarted` `reason`, a token of a-z, 0-9, `_`, `.`, `-`)"},
	{"host/runner", "WatchdogMinInterval", "`--watchdog`", "shortest interval between samples of the tool calls' process subtrees (a quarter of the smaller timeout, within these bounds)"},
	{"host/runner", "WatchdogMaxInterval", "`--watchdog`", "longest interval between samples of the tool calls' process subtrees"},
	{"host/runner", "MaxWatchdogEvents", "`avenor.watchdog` evidence", "last events it holds (`last_events`)"},
	{"host/runner", "MaxWatchdogEventBytes", "`avenor.watchdog` evidence", "bytes of one of `last_events` as JSON; a longer one is summarised (seq, event, tool fields, `truncated: true`)"},
	{"host/runner", "MaxWatchdogStderr", "`avenor.watchdog` evidence", "bytes of the plugin's stderr tail (`stderr_tail`)"},
	{"host/runner", "MaxWatchdogTools", "`avenor.watchdog` evidence", "other tool calls in flight it lists (`tools_in_flight`)"},
	{"host/watchdog", "MaxEvidenceProcs", "`avenor.watchdog` evidence", "processes of one tool call's subtree it lists, the biggest CPU users first (`subtree_omitted` counts the rest)"},
	{"host/watchdog", "MaxCmdline", "`avenor.watchdog` evidence", "bytes of one process's command line"},
	{"host/watchdog", "MaxTools", "`--tool-timeout`", "tool calls tracked at once; one more is left to the progress rule"},
	{"host/watchdog", "MaxProcs", "`--watchdog`", "processes one /proc scan reads"},
	{"host/runner", "DefaultMaxRateLimitResumes", "`--max-rate-limit-resumes`", "resumes of one run after rate limits when the setting is not given"},
	{"host/runner", "MaxRateLimitResumes", "`--max-rate-limit-resumes`", "largest value taken; a larger one is refused before anything starts"},
	{"host/runner", "RateLimitJitter", "`--wait-on-rate-limit`", "most added at random to a reset, so runtimes limited together do not resume in step"},
	{"host/runner", "RateLimitUnknownWait", "`--wait-on-rate-limit`", "wait when the runtime did not say when its rate limit lifts"},
	{"host/runner", "MaxRateLimitWait", "`--wait-on-rate-limit`", "longest single wait; a reset further ahead is waited for this long, then the prompt is sent again"},
	{"host/watchdog", "StartSlack", "`--tool-timeout`", "how long before its `tool.call` a process may have started and still be the tool call's"},
	{"host/runner", "MaxWatchdogRestarts", "`--watchdog-restarts`", "largest value"},
	{"host/run", "MaxSpendPrices", "`spend_prices`", "entries of the price table"},
	{"host/runner", "CompactTimeout", "`--auto-compact-pct`", "longest one compaction may take; then it is cancelled and the run goes on uncompacted, with a warning"},
	{"host/runner", "DefaultWatchdogRestarts", "`--watchdog-restarts`", "default: restarts of one run before a firing cancels the turn instead"},
	{"host/run", "MaxKeptFinalOutput", "`avenor stable`", "runes of a runtime's last `final_output` kept in memory (what `status` and `list` show); `result` reads a longer one back from the event log"},
	{"host/stable", "ReapReleaseDelay", "`avenor stable`", "after reaping parked runtimes, the memory they held goes back to the system this much later (one collection per burst)"},
	{"host/stable", "PhaseSlotRetry", "`avenor stable` loop or team", "how often a phase waiting for an executing slot looks again"},
	{"host/stable", "MaxCapacityWait", "`wait_for_capacity`", "longest `timeout` of one call, and its wait when none is given"},
	{"host/stable", "IdempotencyTTL", "spawn `idempotency_key`", "how long a key's result is remembered"},
	{"host/stable", "IdempotencyCapacity", "spawn `idempotency_key`", "keys remembered at once; a new one evicts the oldest"},
	{"host/stable", "MaxParentMessage", "`send_to_parent`", "longest `message`"},
	{"host/mcpserver", "StartupTimeout", "`avenor mcp`", "time the autostarted `avenor stable` has to listen before the tool call that started it fails"},
	{"host/mcpserver", "DialTimeout", "`avenor mcp`", "one dial and health check of a supervisor"},
	{"host/mcpserver", "ShutdownWait", "`avenor mcp` `avenor_shutdown`", "wait for the autostarted supervisor to exit after its shutdown"},
	{"host/mcpserver", "DefaultHTTPMaxWait", "`avenor mcp --transport http`", "`--max-wait` default: the longest wait of `avenor_status`/`avenor_result` (`wait_clamped`)"},
	{"host/mcpserver", "WaitPoll", "`avenor mcp` waits", "status read when no event of the run arrives"},
	{"host/mcpserver", "WaitSettle", "`avenor mcp` waits", "status read after the run's events; at most one per interval"},
	{"host/mcpserver", "ReadyCheckTimeout", "`avenor_spawn`", "readiness check of the backend before a spawn: starting its plugin and its check of the runtime CLI"},
	{"host/mcpserver", "ReadyCacheTTL", "`avenor_spawn`", "a backend found ready is not checked again for spawns in the same directory; one not ready is checked every time"},
	{"host/mcpserver", "DefaultEventsLimit", "`avenor_events`", "events returned when `limit` is absent"},
	{"host/mcpserver", "MaxEventsLimit", "`avenor_events`", "largest `limit` honoured"},
	{"host/mcpserver", "MaxEventString", "`avenor_events`", "bytes of each string of an event; longer ones are cut (`event_path` names the whole log)"},
	{"host/mcpserver", "MaxResultOutput", "`avenor_result`", "bytes of `output`; longer is cut (`output_truncated`, `output_event_path`)"},
	{"host/mcpserver", "MaxLogLine", "`avenor_events`, `avenor_result`", "longest event log line read; a longer one is skipped"},
	{"host/mcpserver", "ReadHeaderTimeout", "`avenor mcp --transport http`", "time for a request's headers"},
	{"host/mcpserver", "MaxHTTPConnections", "`avenor mcp --transport http`", "connections open at once, counted before any request or token (one more is answered 503 and closed)"},
	{"host/mcpserver", "MaxHTTPConnectionsPerPeer", "`avenor mcp --transport http`", "connections of one other local user (loopback peers, uid from the kernel)"},
	{"host/mcpserver", "ReservedHTTPConnections", "`avenor mcp --transport http`", "of `mcpserver.MaxHTTPConnections`, slots only the user who started it may take"},
	{"host/mcpserver", "HTTPIdleTimeout", "`avenor mcp --transport http`", "an idle keep-alive connection is closed after it"},
	{"host/mcpserver", "MaxHTTPBody", "`avenor mcp --transport http`", "bytes of one request body"},
	{"host/mcpserver", "HTTPShutdownWait", "`avenor mcp --transport http`", "wait for the requests in flight when the server stops"},
	{"sdk/agentproc", "DefaultMaxLineBytes", "plugins (runtime stdout)", "longest line read from an agent CLI; a longer line is discarded"},
	{"sdk/agentproc", "DefaultStderrTailBytes", "plugins (runtime stderr)", "end of stderr kept for crash reports"},
	{"sdk/agentproc", "DefaultCancelGrace", "plugins", "grace between asking an agent CLI to stop and killing it"},
	{"sdk/agentproc", "CgroupRemoveWait", "plugins (runtime cgroup)", "wait for a runtime's killed tree to leave its cgroup before the cgroup is removed"},
	{"sdk/agentproc", "ReaperPollInterval", "plugins (runtime reaper)", "how often a runtime's reaper checks that its plugin lives, on kernels without pidfds (with them it learns at once); it then kills the runtime's tree"},
	{"sdk/agentproc", "ExitReportLines", "plugins (errors)", "last stderr lines quoted when a runtime exits"},
	{"sdk/agentproc", "ExitReportBytes", "plugins (errors)", "bytes of stderr quoted when a runtime exits (cut at a rune boundary)"},
	{"sdk/turn", "DefaultGrace", "plugins", "time a cancelled turn may take to end before its runtime is stopped"},
	{"sdk/acp", "DefaultInitTimeout", "ACP backends", "time for `initialize`"},
	{"sdk/acp", "DefaultSessionTimeout", "ACP backends", "time for `session/new` or `session/load`"},
	{"sdk/acp", "DefaultCancelWait", "ACP backends", "wait for the turn to end after `session/cancel`"},
	{"sdk/jsonrpc", "DefaultWriteTimeout", "ACP and JSON-RPC backends", "one write to the agent's stdin"},
	{"sdk/jsonrpc", "DefaultQueueSize", "ACP and JSON-RPC backends", "messages read ahead from the agent before reading pauses"},
	{"sdk/mcpconfig", "MaxFileBytes", "`.mcp.json` edits (claude-channel, `claude-channel-cleanup`)", "largest file rewritten; a larger one is an error and left as it is"},
	{"plugins/opencode/internal/ocwarm", "Timeout", "opencode-acp", "the warm-up of a fresh `opencode acp` for its first prompt (finding its API port, `GET /file` for the session's directory, the configured model's tools)"},
	{"plugins/opencode/internal/ochttp", "HealthTryTimeout", "opencode-http", "one `GET /global/health` try, each on a fresh connection"},
	{"plugins/opencode/internal/ochttp", "DefaultHealthTimeout", "opencode-http", "how long opening a session waits for the server's health in all; option `health_timeout`"},
	{"plugins/claude/internal/channel", "MaxBodyBytes", "claude-channel broker", "largest request body (413 beyond)"},
	{"plugins/claude/internal/channel", "MaxPollWait", "claude-channel broker", "longest `/poll-control` long-poll"},
	{"plugins/claude/internal/channel", "MaxQueuedControls", "claude-channel broker", "control messages waiting for the sidecar (429 beyond)"},
	{"plugins/claude/internal/channel", "HeartbeatInterval", "claude-channel sidecar", "time between heartbeats"},
	{"plugins/claude/internal/channel", "MaxFrameBytes", "claude-channel sidecar", "longest MCP stdio line; a longer one is answered with a parse error"},
}

// BoundsTable renders Bounds from the source under root.
func BoundsTable(root string) (string, error) {
	var b strings.Builder
	b.WriteString("| applies to | bound | value | constant |\n|---|---|---|---|\n")
	consts := map[string]map[string]ast.Expr{}
	for _, bd := range Bounds {
		cs, ok := consts[bd.Dir]
		if !ok {
			var err error
			if cs, err = packageConsts(filepath.Join(root, bd.Dir)); err != nil {
				return "", err
			}
			consts[bd.Dir] = cs
		}
		e, ok := cs[bd.Name]
		if !ok {
			return "", fmt.Errorf("bounds: constant %s not found in %s", bd.Name, bd.Dir)
		}
		v, err := evalConst(e, cs)
		if err != nil {
			return "", fmt.Errorf("bounds: %s.%s: %w", bd.Dir, bd.Name, err)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | `%s.%s` |\n", bd.Scope, cell(bd.Means), v.String(bd.Name), filepath.Base(bd.Dir), bd.Name)
	}
	return b.String(), nil
}

func packageConsts(dir string) (map[string]ast.Expr, error) {
	out := map[string]ast.Expr{}
	err := eachSourceFile(dir, func(f *ast.File) {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						out[n.Name] = vs.Values[i]
					}
				}
			}
		}
	})
	return out, err
}

// eachSourceFile parses every non-test Go file of the package in dir and
// hands it to fn: the docs read the code's own source, not a build.
func eachSourceFile(dir string, fn func(*ast.File)) error {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		fn(f)
	}
	return nil
}

type constVal struct {
	n        int64
	duration bool
}

func (v constVal) String(name string) string {
	switch {
	case v.duration:
		return time.Duration(v.n).String()
	case (strings.Contains(name, "Line") || strings.Contains(name, "Bytes") || strings.Contains(name, "Message")) && v.n >= 1<<20 && v.n%(1<<20) == 0:
		return strconv.FormatInt(v.n>>20, 10) + " MiB"
	case (strings.Contains(name, "Line") || strings.Contains(name, "Bytes") || strings.Contains(name, "Message")) && v.n >= 1<<10 && v.n%(1<<10) == 0:
		return strconv.FormatInt(v.n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(v.n, 10)
}

var timeUnits = map[string]time.Duration{
	"Nanosecond": time.Nanosecond, "Microsecond": time.Microsecond, "Millisecond": time.Millisecond,
	"Second": time.Second, "Minute": time.Minute, "Hour": time.Hour,
}

// evalConst evaluates the simple constant expressions bounds are written
// in: integers, time units, *, <<, +, -, parentheses and same-package names.
func evalConst(e ast.Expr, cs map[string]ast.Expr) (constVal, error) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind != token.INT {
			return constVal{}, fmt.Errorf("not an integer: %s", x.Value)
		}
		n, err := strconv.ParseInt(x.Value, 0, 64)
		return constVal{n: n}, err
	case *ast.ParenExpr:
		return evalConst(x.X, cs)
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok && id.Name == "time" {
			if d, ok := timeUnits[x.Sel.Name]; ok {
				return constVal{n: int64(d), duration: true}, nil
			}
		}
	case *ast.Ident:
		if o, ok := cs[x.Name]; ok {
			return evalConst(o, cs)
		}
	case *ast.BinaryExpr:
		l, err := evalConst(x.X, cs)
		if err != nil {
			return constVal{}, err
		}
		r, err := evalConst(x.Y, cs)
		if err != nil {
			return constVal{}, err
		}
		switch x.Op {
		case token.MUL:
			return constVal{n: l.n * r.n, duration: l.duration || r.duration}, nil
		case token.SHL:
			return constVal{n: l.n << r.n, duration: l.duration}, nil
		case token.ADD:
			return constVal{n: l.n + r.n, duration: l.duration || r.duration}, nil
		case token.SUB:
			return constVal{n: l.n - r.n, duration: l.duration || r.duration}, nil
		}
	}
	return constVal{}, fmt.Errorf("cannot evaluate %T", e)
}
