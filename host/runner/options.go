package runner

import (
	"context"
	"io"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/plugins"
	"github.com/avenor-go/avenor/sdk/plugin"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Options configures one run. Zero values are usable defaults except where
// a field says it is required.
type Options struct {
	// Backend name, e.g. "opencode-acp". Required.
	Backend string
	// Dir is the agent's absolute working directory. Required.
	Dir string
	// DirExplicit says the user chose Dir (--dir, a spawn's dir).
	DirExplicit bool
	// Prompt is the first turn's text. Required.
	Prompt string
	// Images go with the first turn of every attempt (--image); checked
	// files, refused before Open for a backend without sdk.CapImages.
	Images []sdk.Image
	// Questions opens sessions that hear their runtime's own questions
	// (--questions); false: a runtime's question is handled by its backend
	// exactly as before questions existed.
	Questions bool

	Model, Agent, Thinking string
	// PermissionMode and LaunchContext go to the plugin in Open (sdk.OpenRequest)
	// after CheckLaunch; zero values ask for nothing, exactly as before.
	PermissionMode sdk.PermissionMode
	LaunchContext  sdk.LaunchContext
	// Sandbox is the boundary the plugin launches the runtime inside, after
	// CheckSandbox; inactive (the zero value) launches it as before.
	Sandbox sdk.Sandbox
	// SandboxRecover is --sandbox-recover (recover.go): with a sandbox,
	// a denial is put to a person when the turn ends, and an approval
	// restarts the run widened. The zero value asks nothing.
	SandboxRecover SandboxRecovery
	// Resume is the session id to resume on the first attempt; retries
	// resume the previous attempt's session.
	Resume    string
	ServerURL string

	// RunID stamps every event; Label becomes run_label.
	RunID, Label string

	// Timeout is the whole run's wall clock (0: none); it ends the run with
	// stop reason "timeout", exit 124.
	Timeout time.Duration
	// ProgressTimeout ends a turn that emits no event for this long
	// ("progress_timeout", exit 124). 0: none.
	ProgressTimeout time.Duration
	// Watchdog is the turn watchdog (docs/unattended.md); the zero value
	// is off, and ProgressTimeout then ends a quiet turn as it always did.
	Watchdog Watchdog
	// Spend is the runtime's spend limits (docs/unattended.md#spend-limits),
	// shared by its runs; Check refuses what the backend cannot be held to
	// before a session opens. Default nil: no limit, nothing of it in the
	// stream.
	Spend *Spend
	// ContextWarnPct, 1-100, asks for context use after each turn
	// (avenor.context, docs/unattended.md#context-use) and a warning at
	// this share of the window. Default 0: none, nothing of it written.
	ContextWarnPct int
	// AutoCompactPct, 1-100, asks the runtime to compact its context
	// natively at the turn boundary after a turn whose context use is at
	// or past this share of the window (avenor.context.compacted); it
	// implies context use's avenor.context. Default 0: never.
	AutoCompactPct int
	// MaxRetries is how many extra attempts follow an attempt that exits 1.
	MaxRetries int
	// RateLimit is what a turn that fails on a rate limit does
	// (docs/unattended.md#rate-limits); the zero value ends it with the
	// error, as before.
	RateLimit RateLimit
	// ReportUsage lets the runtime's account usage windows
	// (avenor.usage.account) into the stream (--report-usage); false
	// drops them, so a run that did not ask sees the stream as before.
	ReportUsage bool

	// AutoApprove answers ordinary permission requests with their first
	// allow option.
	AutoApprove bool

	// Events receives the NDJSON event log; nil discards it. Unused when
	// Writer is set.
	Events io.Writer
	// Writer, when set, is the event stream the run writes to instead of a
	// writer of its own over Events (RunID and Label are then the writer's
	// to stamp): the phases of a loop or team run share one stream, one seq
	// and one log. The run then stamps session_id on its own events itself
	// and leaves the writer's session stamping alone, because parallel team
	// members share the writer. Default nil: a writer of its own.
	Writer *event.Writer
	// OnEvent, when set, sees every event the run writes, stamped and in
	// stream order, on the writing goroutine; it must return quickly (a loop
	// scans message and thought text for its markers). Default nil.
	OnEvent func(event.Event)
	// OnEventTypes, when set, limits OnEvent to the events of these types:
	// a plugin event arrives as JSON and is decoded into a map only for an
	// OnEvent that wants it. Default nil: every event.
	OnEventTypes map[sdk.EventType]bool
	// Observer, when set, learns the run's typed facts (a session opened,
	// started, ended) as they happen. Default nil.
	Observer Observer
	// FollowUp, when set, is asked after a turn that ended cleanly and left
	// the control plane nothing to run: a text and true become the next turn
	// of the same session (a loop phase's on_incomplete nudge). Default nil.
	FollowUp func() (string, bool)
	// SentinelPath, when set, gets the sentinel after the last attempt. A
	// loop's phases leave it empty: the loop writes the run's one sentinel.
	SentinelPath string
	// PermBase is the permission file base cleaned before each attempt
	// (<base>.req, <base>.req.response); empty: none.
	PermBase string

	// Env is extra runtime environment for the plugin's session; values are
	// secrets and never logged.
	Env map[string]string
	// PluginOptions are [backends.<name>].options, passed in Open.
	PluginOptions map[string]any
	// StateDir is the plugin's own state directory.
	StateDir string

	// Launch starts a fresh plugin for an attempt. Required.
	Launch func(ctx context.Context) (*plugins.Launched, error)
	// KeepSession, when set, leaves the last attempt's plugin and session
	// open when the run ends with both still usable (the run was not
	// stopped and the plugin did not die): Result.Held carries them, for a
	// later run's Held. Default false: the session is closed.
	KeepSession bool
	// Held, when set, is a session an earlier run kept: the first attempt
	// continues it in its plugin process instead of launching a plugin and
	// opening a session. If that plugin has died since, the attempt launches
	// a fresh one and resumes Resume as usual. The run owns Held from the
	// moment Run is called. Default nil.
	Held *HeldSession
	// Reattach, when set, makes the first attempt take its session over
	// from the plugin Launch returns — one that outlived the supervisor
	// before this one (avenor stable after a restart) — instead of opening one:
	// no session.start is written, the log has it. With AdoptTurn, the turn
	// in flight in that plugin is the run's first turn (awaited, not
	// prompted, no avenor.turn.start) and Prompt is unused. Default nil.
	Reattach  func(ctx context.Context, l *plugins.Launched, h sdk.Host) (sdk.Session, plugin.Reattached, error)
	AdoptTurn bool
	// AdoptedEvents are the adopted turn's events already in the log
	// (AdoptTurn), so that its final output is the whole turn's.
	AdoptedEvents []event.Event
	// TurnsBefore is how many turns a runner before this one numbered in
	// the same run (a restart's, Runner.Restart): this run's turns go on
	// from TurnsBefore+1. Default 0.
	TurnsBefore int

	// Logger for diagnostics; default none.
	Logger hclog.Logger
	// Stderr receives one-line messages for the user; default discard.
	Stderr io.Writer
	// Sleep waits between retries; default a timer. Tests inject it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter spreads a retry's backoff so that many runs failing together
	// do not retry in step; default adds up to BackoffJitter of it at
	// random. Tests inject the identity.
	Jitter func(d time.Duration) time.Duration
	// CancelBudget is how long a cancelled turn may take to end before the
	// plugin and its runtime are killed. Default 5s.
	CancelBudget time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Result is how a run ended.
type Result struct {
	ExitCode   int
	StopReason sdk.StopReason
	SessionID  string
	// Held is the session kept open (Options.KeepSession), nil when none;
	// the caller must pass it to a later run or Close it.
	Held *HeldSession
	// SentinelErr is why the sentinel could not be written (a full disk, a
	// missing directory), already told on stderr; nil when it was written
	// or none was asked for. A harness waiting for the sentinel never sees
	// this run end, so `avenor run` must not exit 0 over it.
	SentinelErr error
	// Restarted: the run was stopped by Restart, wrote no sentinel and no
	// session.end for its stopped turn, and goes on for the harness in a
	// fresh process on SessionID (its owner's to begin). ExitCode and
	// StopReason are then not the run's end.
	Restarted bool
	// Queued are the prompts queued (Prompt) and not run when the run
	// restarted, in order, for the fresh process to run after its first
	// turn; nil otherwise.
	Queued []string
}

func (o *Options) defaults() {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.Sleep == nil {
		o.Sleep = sleepCtx
	}
	if o.Jitter == nil {
		o.Jitter = jitter
	}
	if o.CancelBudget <= 0 {
		o.CancelBudget = DefaultCancelBudget
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Bounds of a run.
const (
	// DefaultCancelBudget is how long a plugin gets to end a cancelled turn.
	DefaultCancelBudget = 5 * time.Second
	// closeBudget bounds closing a session after its last turn.
	closeBudget = 5 * time.Second
	// maxBackoff caps the retry backoff (2, 4, 8, 16, 30, 30… seconds).
	maxBackoff = 30 * time.Second
	// CheckBudget bounds the readiness check after a session failed to
	// open, which decides whether a retry could help.
	CheckBudget = 15 * time.Second
)

// BackoffJitter is the largest share of a backoff added at random (0.2:
// a 2 s backoff waits 2–2.4 s). The contract's backoff (docs/run.md#retry) is the
// floor; the jitter keeps runs that failed together from retrying in step.
const BackoffJitter = 0.2

func jitter(d time.Duration) time.Duration {
	return d + time.Duration(rand.Float64()*BackoffJitter*float64(d))
}

// Backoff is the wait before retry number n (1-based): min(2<<(n-1), 30) s.
func Backoff(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > 5 {
		return maxBackoff
	}
	return min(time.Duration(2<<(n-1))*time.Second, maxBackoff)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
