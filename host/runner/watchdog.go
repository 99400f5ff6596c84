package runner

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/plugins"
	"github.com/avenor-go/avenor/host/watchdog"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// The turn watchdog (docs/unattended.md): a tool call whose own process
// subtree does nothing past --tool-timeout, or a turn with no event for
// --progress-timeout, fires an avenor.watchdog event with its evidence,
// then warns, cancels the turn or restarts it on its session.

// WatchdogAction is what the watchdog does when it fires.
type WatchdogAction string

// The watchdog's actions; "" is no watchdog (--progress-timeout alone ends
// the turn as it always did).
const (
	WatchdogWarn    WatchdogAction = "warn"
	WatchdogCancel  WatchdogAction = "cancel"
	WatchdogRestart WatchdogAction = "restart"
)

// Watchdog configures the turn watchdog. The zero value is off.
type Watchdog struct {
	// Action is warn, cancel or restart; "" turns the watchdog off.
	Action WatchdogAction
	// ToolTimeout is the age past which a tool call whose subtree gained
	// neither CPU nor I/O over the last ToolTimeout is hung; 0: no tool
	// rule.
	ToolTimeout time.Duration
	// Restarts is how many times restart may restart the run; once they
	// are used up a firing cancels the turn instead.
	Restarts int
	// Restart restarts the run on its session, the note its fresh turn's
	// prompt (host/run's Runtime.Restart); it is called on a goroutine of
	// its own and may block until the fresh turn begins. Nil: restart
	// cancels instead.
	Restart func(note string) error
	// TakeRestart reserves one of the run's restarts; false when they are
	// used up. Nil: a count the runner keeps (restarts of one runner).
	TakeRestart func() (used int, ok bool)
	// CheckBackend refuses, before a session opens, a backend the action
	// cannot work with (restart: one that cannot resume in a fresh
	// process). Nil: none.
	CheckBackend func(sdk.BackendInfo) error
	// Interval is how often the tool subtrees are sampled; default a
	// quarter of the smaller timeout, between WatchdogMinInterval and
	// WatchdogMaxInterval.
	Interval time.Duration
	// ProcRoot is /proc; tests give another.
	ProcRoot string
}

// Bounds of the watchdog and its evidence (docs/configuration.md#bounds).
const (
	// WatchdogMinInterval and WatchdogMaxInterval bound the sampling
	// interval.
	WatchdogMinInterval = 100 * time.Millisecond
	WatchdogMaxInterval = time.Second
	// MaxWatchdogEvents bounds the last events an evidence holds.
	MaxWatchdogEvents = 16
	// MaxWatchdogEventBytes bounds one of them, as JSON; a longer one is
	// summarised (seq, event, tool fields, truncated: true).
	MaxWatchdogEventBytes = 512
	// MaxWatchdogStderr bounds the plugin's stderr tail in an evidence.
	MaxWatchdogStderr = 2048
	// MaxWatchdogTools bounds the tool calls a progress evidence lists.
	MaxWatchdogTools = 8
	// DefaultWatchdogRestarts is --watchdog-restarts' default.
	DefaultWatchdogRestarts = 2
	// MaxWatchdogRestarts bounds --watchdog-restarts.
	MaxWatchdogRestarts = 20
)

// WatchdogNote is the fresh turn's prompt after a watchdog restart.
const WatchdogNote = "Your previous turn was stopped by the avenor watchdog because it looked hung (a tool made no progress, or no event came for too long). Continue the task from where you left off; avoid the command that hung, or run it in a way that cannot block."

// TypeWatchdog is the event a firing watchdog writes.
const TypeWatchdog = event.TypeWatchdog

// Kinds of firing.
const (
	WatchdogKindTool     = "tool"
	WatchdogKindProgress = "progress"
)

// Fired is the last firing of a run's watchdog, for status views.
type Fired struct {
	Kind   string `json:"kind"`
	Tool   string `json:"tool,omitempty"`
	At     int64  `json:"at"`
	Action string `json:"action"`
	IdleMs int64  `json:"idle_for_ms"`
	Count  int    `json:"count"`
}

// view is f as status views show it.
func (f Fired) view() map[string]any {
	m := map[string]any{"kind": f.Kind, "at": f.At, "action": f.Action, "idle_for_ms": f.IdleMs, "count": f.Count}
	if f.Tool != "" {
		m["tool"] = f.Tool
	}
	return m
}

// ValidWatchdogAction reports whether s names an action.
func ValidWatchdogAction(s string) bool {
	switch WatchdogAction(s) {
	case WatchdogWarn, WatchdogCancel, WatchdogRestart:
		return true
	}
	return false
}

// turnDog is a run's watchdog state.
type turnDog struct {
	cfg      Watchdog
	tracker  *watchdog.Tracker
	interval time.Duration
	// lastEvent is when the turn's last event arrived (unix ns).
	lastEvent atomic.Int64
	// restarting: a restart was asked for; no more firings this turn.
	restarting atomic.Bool
	restarts   atomic.Int32 // TakeRestart's fallback count

	mu     sync.Mutex
	fired  *Fired
	count  int
	ticker *time.Ticker
}

func newTurnDog(cfg Watchdog, progress time.Duration) *turnDog {
	if cfg.Action == "" {
		return nil
	}
	iv := cfg.Interval
	if iv <= 0 {
		base := cfg.ToolTimeout
		if base <= 0 || (progress > 0 && progress < base) {
			base = progress
		}
		iv = min(max(base/4, WatchdogMinInterval), WatchdogMaxInterval)
	}
	return &turnDog{cfg: cfg, interval: iv,
		tracker: watchdog.NewTracker(watchdog.Config{ToolTimeout: cfg.ToolTimeout, ProcRoot: cfg.ProcRoot})}
}

// WatchdogFired is the run's last watchdog firing; nil when none.
func (r *Runner) WatchdogFired() *Fired {
	d := r.dog
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fired == nil {
		return nil
	}
	f := *d.fired
	return &f
}

// CarryWatchdog makes f, the last firing of the runner this one replaces
// (a restart's), this run's last firing until it fires itself; the count
// goes on from it.
func (r *Runner) CarryWatchdog(f *Fired) {
	d := r.dog
	if d == nil || f == nil {
		return
	}
	c := *f
	d.mu.Lock()
	d.fired, d.count = &c, c.Count
	d.mu.Unlock()
	r.status.update(func(s *Status) { s.Watchdog = c.view() })
}

// observe follows the tool calls in the stream: typ and the event's
// string fields (get).
func (d *turnDog) observe(typ sdk.EventType, get func(string) string, now time.Time) {
	d.lastEvent.Store(now.UnixNano())
	switch typ {
	case sdk.EventToolCall, sdk.EventToolCallUpdate:
		id := get("toolCallId")
		switch get("status") {
		case "completed", "failed", "cancelled":
			d.tracker.End(id)
		default:
			if typ == sdk.EventToolCall {
				title := get("title")
				if title == "" {
					title = get("kind")
				}
				d.tracker.Start(id, clipText(title, 200), now)
			}
		}
	case "avenor.tool.start":
		d.tracker.Start(get("toolCallId"), clipText(get("toolName"), 200), now)
	case "avenor.tool.end":
		d.tracker.End(get("toolCallId"))
	}
}

// observeEvent and observeFields are observe for the two write paths.
func (r *Runner) observeEvent(ev event.Event) {
	if r.dog == nil {
		return
	}
	r.dog.observe(ev.Type(), func(k string) string { s, _ := ev[k].(string); return s }, r.opts.Now())
}

func (r *Runner) observeFields(f *event.Fields) {
	if r.dog == nil {
		return
	}
	r.dog.observe(f.Type(), func(k string) string { b, _ := f.Str(k); return string(b) }, r.opts.Now())
}

// firing is one decision of the watchdog to act.
type firing struct {
	kind    string
	tool    *watchdog.ToolInfo
	idleFor time.Duration
}

// sample scans the plugin's tree and returns the tool rule's firings, and
// the progress rule's for a tool call with no subtree of its own (no event
// for the tool timeout).
func (d *turnDog) sample(l *plugins.Launched, h *sessionHost, now time.Time) []firing {
	if d.restarting.Load() {
		return nil
	}
	if d.tracker.InFlight() == 0 {
		return nil
	}
	var out []firing
	// Without /proc no subtree is ever seen: every tool call is left to
	// the progress rule below.
	if clock, ok := watchdog.NewClock(d.tracker.Config().ProcRoot); ok {
		procs := watchdog.ReadProcs(d.tracker.Config().ProcRoot)
		for _, f := range d.tracker.Observe(now, procs, d.roots(l, h), clock) {
			out = append(out, firing{kind: WatchdogKindTool, tool: &f.Tool, idleFor: f.IdleFor})
		}
	}
	if d.cfg.ToolTimeout > 0 && len(out) == 0 {
		quiet := now.Sub(time.Unix(0, d.lastEvent.Load()))
		if quiet >= d.cfg.ToolTimeout {
			for _, t := range d.tracker.Tools(now, MaxWatchdogTools) {
				// A tool whose own processes just ended (its subtree's
				// last change within the timeout) is being reported, not
				// hung: the runtime's tool end follows its processes'.
				recent := t.HadProcs && time.Duration(t.IdleMs)*time.Millisecond < d.cfg.ToolTimeout
				if t.Verdict == watchdog.NoSubtree.String() && !recent {
					t := t
					out = append(out, firing{kind: WatchdogKindProgress, tool: &t, idleFor: quiet})
					d.lastEvent.Store(now.UnixNano()) // once per quiet period
					break
				}
			}
		}
	}
	return out
}

// roots are the pids whose descendants a tool call's processes are: the
// plugin's and its runtime's.
func (d *turnDog) roots(l *plugins.Launched, h *sessionHost) []int {
	var roots []int
	if l != nil && l.Client != nil {
		if p := l.Client.PID(); p > 0 {
			roots = append(roots, p)
		}
	}
	if p := h.process().PID; p > 0 {
		roots = append(roots, p)
	}
	return roots
}

// fire writes the avenor.watchdog event of f and decides the action:
// warn (nothing more), cancel (the caller stops the turn), restart (asked
// on a goroutine of its own; restartFailed gets why it could not be).
func (r *Runner) fire(l *plugins.Launched, h *sessionHost, f firing, restartFailed chan<- error) WatchdogAction {
	d := r.dog
	now := r.opts.Now()
	action := d.cfg.Action
	exhausted := false
	used := 0
	if action == WatchdogRestart {
		ok := false
		if d.cfg.Restart != nil {
			if take := d.cfg.TakeRestart; take != nil {
				used, ok = take()
			} else if n := int(d.restarts.Add(1)); n <= d.cfg.Restarts {
				used, ok = n, true
			}
		}
		if !ok {
			action, exhausted = WatchdogCancel, true
		}
	}
	ev := event.Event{
		"event": string(TypeWatchdog), "kind": f.kind, "idle_for_ms": f.idleFor.Milliseconds(),
		"action": string(action), "evidence": r.evidence(l, h, f, now),
	}
	if f.tool != nil {
		ev["tool"] = f.tool.ID
	}
	if d.cfg.Action == WatchdogRestart {
		ev["restarts_allowed"] = d.cfg.Restarts
		if exhausted {
			ev["restarts_exhausted"] = true
		} else {
			ev["restart"] = used
		}
	}
	d.mu.Lock()
	d.count++
	fired := Fired{Kind: f.kind, At: now.UnixMilli(), Action: string(action), IdleMs: f.idleFor.Milliseconds(), Count: d.count}
	if f.tool != nil {
		fired.Tool = f.tool.ID
	}
	d.fired = &fired
	d.mu.Unlock()
	r.status.update(func(s *Status) { s.Watchdog = fired.view() })
	h.emit(ev)
	msg := fmt.Sprintf("watchdog: %s", describeFiring(f))
	switch action {
	case WatchdogCancel:
		if exhausted {
			msg += fmt.Sprintf("; its %d restarts are used up, cancelling the turn", d.cfg.Restarts)
		} else {
			msg += "; cancelling the turn"
		}
	case WatchdogRestart:
		msg += "; restarting the turn on its session"
		d.restarting.Store(true)
		go func() {
			if err := d.cfg.Restart(WatchdogNote); err != nil {
				select {
				case restartFailed <- err:
				default:
				}
			}
		}()
	default:
		msg += "; the turn goes on"
	}
	fmt.Fprintf(r.opts.Stderr, "avenor: %s\n", msg)
	return action
}

func describeFiring(f firing) string {
	idle := f.idleFor.Round(100 * time.Millisecond)
	switch {
	case f.kind == WatchdogKindTool:
		return fmt.Sprintf("tool call %s (%q) made no progress (no CPU, no I/O) for %s", f.tool.ID, f.tool.Title, idle)
	case f.tool != nil:
		return fmt.Sprintf("tool call %s (%q) has no process of its own and no event came for %s", f.tool.ID, f.tool.Title, idle)
	}
	return fmt.Sprintf("no event for %s", idle)
}

// evidence is a firing's evidence, every part bounded
// (docs/configuration.md#bounds).
func (r *Runner) evidence(l *plugins.Launched, h *sessionHost, f firing, now time.Time) map[string]any {
	ev := map[string]any{"last_events": r.lastEvents()}
	if f.tool != nil {
		ev["tool"] = toolMap(*f.tool, false)
		ev["subtree"] = procsMap(f.tool.Procs)
		if f.tool.ProcsOmitted > 0 {
			ev["subtree_omitted"] = f.tool.ProcsOmitted
		}
	}
	var tools []any
	for _, t := range r.dog.tracker.Tools(now, MaxWatchdogTools) {
		if f.tool != nil && t.ID == f.tool.ID {
			continue
		}
		tools = append(tools, toolMap(t, true))
	}
	if len(tools) > 0 {
		ev["tools_in_flight"] = tools
	}
	if l != nil && l.Client != nil {
		ev["plugin_pid"] = l.Client.PID()
		if tail := tailText(l.Client.StderrTail(), MaxWatchdogStderr); tail != "" {
			ev["stderr_tail"] = tail
		}
	}
	if p := h.process().PID; p > 0 {
		ev["runtime_pid"] = p
	}
	return ev
}

func toolMap(t watchdog.ToolInfo, withProcs bool) map[string]any {
	m := map[string]any{"id": t.ID, "title": t.Title, "age_ms": t.AgeMs, "idle_ms": t.IdleMs, "verdict": t.Verdict}
	if withProcs {
		m["subtree"] = procsMap(t.Procs)
	}
	return m
}

func procsMap(ps []watchdog.ProcDelta) []any {
	out := make([]any, 0, len(ps))
	for _, p := range ps {
		m := map[string]any{"pid": p.PID, "ppid": p.PPID, "comm": p.Comm, "cpu_ms": p.CPUMs, "io_bytes": p.IOBytes,
			"cpu_total_ms": p.CPUTotalMs, "io_total_bytes": p.IOTotal}
		if p.Cmdline != "" {
			m["cmdline"] = p.Cmdline
		}
		out = append(out, m)
	}
	return out
}

// lastEvents are the stream's last MaxWatchdogEvents events, each at most
// MaxWatchdogEventBytes as JSON (a longer one summarised).
func (r *Runner) lastEvents() []any {
	seq := r.w.LatestSeq()
	hist := r.w.History(max(seq-MaxWatchdogEvents, 0), MaxWatchdogEvents)
	out := make([]any, 0, len(hist))
	for _, e := range hist {
		if size(e) <= MaxWatchdogEventBytes {
			out = append(out, e)
			continue
		}
		s := map[string]any{"truncated": true}
		for _, k := range []string{"seq", "ts", "event", "toolCallId", "title", "status", "kind", "source"} {
			if v, ok := e[k]; ok {
				if str, isStr := v.(string); isStr {
					v = clipText(str, 120)
				}
				s[k] = v
			}
		}
		out = append(out, s)
	}
	return out
}

// size is about what e takes as JSON.
func size(e event.Event) int {
	b, err := json.Marshal(e)
	if err != nil {
		return MaxWatchdogEventBytes + 1
	}
	return len(b)
}

// tailText is the last max bytes of s, cut at a rune and a line start.
func tailText(s string, max int) string {
	s = strings.TrimRight(s, "\n")
	if len(s) <= max {
		return s
	}
	s = s[len(s)-max:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
		s = s[i+1:]
	}
	return s
}

// clipText is s cut to at most max bytes, at a rune.
func clipText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// startDog starts the turn's sampling ticker; nil (a channel that never
// fires) without a watchdog.
func (r *Runner) startDog() <-chan time.Time {
	d := r.dog
	if d == nil {
		return nil
	}
	d.tracker.Reset()
	d.restarting.Store(false)
	d.lastEvent.Store(r.opts.Now().UnixNano())
	d.mu.Lock()
	d.ticker = time.NewTicker(d.interval)
	c := d.ticker.C
	d.mu.Unlock()
	return c
}

// stopDog stops the turn's ticker and forgets its tool calls.
func (r *Runner) stopDog() {
	d := r.dog
	if d == nil {
		return
	}
	d.mu.Lock()
	if d.ticker != nil {
		d.ticker.Stop()
		d.ticker = nil
	}
	d.mu.Unlock()
	d.tracker.Reset()
}

// progressFired handles the progress timer with the watchdog on: a busy
// tool subtree holds it off (a compile prints nothing for minutes); else
// the watchdog fires kind progress and the timer is re-armed (warn,
// restart) or the turn is stopped (cancel: stop is true).
func (r *Runner) progressFired(l *plugins.Launched, sess sdk.Session, h *sessionHost, done <-chan promptReturn, timer *time.Timer, restartFailed chan<- error) (turnOutcome, bool) {
	o := &r.opts
	now := o.Now()
	if r.dog.restarting.Load() {
		timer.Reset(o.ProgressTimeout)
		return turnOutcome{}, false
	}
	if r.dog.tracker.InFlight() > 0 {
		// Sample now: the ticker's last sample may be a tick old.
		_ = r.dog.sample(l, h, now)
		if r.dog.tracker.ActiveWithin(now, o.ProgressTimeout) {
			timer.Reset(r.dog.interval)
			return turnOutcome{}, false
		}
	}
	quiet := now.Sub(time.Unix(0, r.dog.lastEvent.Load()))
	if quiet < o.ProgressTimeout {
		// An event came while a busy tool held the timer off.
		timer.Reset(o.ProgressTimeout - quiet)
		return turnOutcome{}, false
	}
	if r.fire(l, h, firing{kind: WatchdogKindProgress, idleFor: quiet}, restartFailed) == WatchdogCancel {
		r.status.update(func(s *Status) { s.TurnState = TurnCancelling })
		return r.stopTurn(l, sess, h, done, sdk.StopCancelled, ""), true
	}
	timer.Reset(o.ProgressTimeout)
	return turnOutcome{}, false
}
