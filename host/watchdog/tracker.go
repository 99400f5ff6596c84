package watchdog

import (
	"sort"
	"sync"
	"time"
)

// Bounds of the tracker and its evidence.
const (
	// MaxTools bounds the tool calls tracked at once; a tool call beyond
	// it is not judged by the tool rule (the progress rule still holds).
	MaxTools = 1024
	// MaxEvidenceProcs bounds the processes an evidence lists (the
	// biggest CPU users first).
	MaxEvidenceProcs = 32
	// StartSlack is how long before its tool.call event a process may have
	// started and still count as the tool's: a runtime may start the
	// process before it reports the call.
	StartSlack = time.Second
)

// Config is the tool rule's thresholds.
type Config struct {
	// ToolTimeout is the age past which an idle tool call is hung; 0: the
	// tool rule is off (tools are still sampled, for the progress rule's
	// busy test).
	ToolTimeout time.Duration
	// Window is how long a subtree must gain nothing to be idle; default
	// ToolTimeout (or 1s when that is 0).
	Window time.Duration
	// ProcRoot is /proc; tests give a fake.
	ProcRoot string
}

// Tracker follows the tool calls of a turn in flight and samples their
// subtrees. Safe for concurrent use.
type Tracker struct {
	cfg Config

	mu    sync.Mutex
	tools map[string]*tool
}

type tool struct {
	id, title string
	started   time.Time
	// last is the subtree at the last sample; base at its last activity.
	last, base map[Key]Usage
	procs      map[Key]Proc
	lastActive time.Time
	hasProcs   bool
	fired      bool
}

// NewTracker returns a tracker with cfg's defaults filled in.
func NewTracker(cfg Config) *Tracker {
	if cfg.Window <= 0 {
		cfg.Window = cfg.ToolTimeout
		if cfg.Window <= 0 {
			cfg.Window = time.Second
		}
	}
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = "/proc"
	}
	return &Tracker{cfg: cfg, tools: map[string]*tool{}}
}

// Config is the tracker's configuration, defaults filled in.
func (t *Tracker) Config() Config { return t.cfg }

// Start records a tool call that began at at; a call already tracked, an
// empty id, or one past MaxTools is ignored.
func (t *Tracker) Start(id, title string, at time.Time) {
	if id == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.tools[id]; ok || len(t.tools) >= MaxTools {
		return
	}
	t.tools[id] = &tool{id: id, title: title, started: at, lastActive: at}
}

// End forgets a tool call that ended.
func (t *Tracker) End(id string) {
	t.mu.Lock()
	delete(t.tools, id)
	t.mu.Unlock()
}

// Reset forgets every tool call (the turn ended).
func (t *Tracker) Reset() {
	t.mu.Lock()
	clear(t.tools)
	t.mu.Unlock()
}

// InFlight is how many tool calls are tracked.
func (t *Tracker) InFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.tools)
}

// ProcDelta is one process of a subtree in an evidence.
type ProcDelta struct {
	PID     int    `json:"pid"`
	PPID    int    `json:"ppid"`
	Comm    string `json:"comm"`
	Cmdline string `json:"cmdline,omitempty"`
	// CPUMs and IOBytes are what it gained over the window (since the
	// subtree's last activity); the totals are its whole life's.
	CPUMs      int64 `json:"cpu_ms"`
	IOBytes    int64 `json:"io_bytes"`
	CPUTotalMs int64 `json:"cpu_total_ms"`
	IOTotal    int64 `json:"io_total_bytes"`
}

// ToolInfo is one tool call in an evidence.
type ToolInfo struct {
	ID    string `json:"id"`
	Title string `json:"title,omitempty"`
	AgeMs int64  `json:"age_ms"`
	// Verdict is the tool rule's (busy, hung, no_subtree, young).
	Verdict string `json:"verdict"`
	// IdleMs is how long its subtree has gained nothing.
	IdleMs int64       `json:"idle_ms"`
	Procs  []ProcDelta `json:"subtree"`
	// ProcsOmitted is how many processes past MaxEvidenceProcs were left
	// out.
	ProcsOmitted int `json:"subtree_omitted,omitempty"`
	// HadProcs: processes of its own were seen at some sample (they may
	// have ended since).
	HadProcs bool `json:"-"`
}

// Firing is a tool call the tool rule found hung.
type Firing struct {
	Tool    ToolInfo
	IdleFor time.Duration
}

// Observe takes one sample: procs is a scan of the machine, roots the
// plugin's and its runtime's pids, clock the scan's clock. It returns the
// tool calls newly found hung; each fires once.
func (t *Tracker) Observe(now time.Time, procs []Proc, roots []int, clock Clock) []Firing {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.tools) == 0 {
		return nil
	}
	// One pass for every tool: the earliest start bounds the subtree.
	earliest := now
	for _, tl := range t.tools {
		if tl.started.Before(earliest) {
			earliest = tl.started
		}
	}
	all := Subtree(procs, roots, clock.Ticks(earliest.Add(-StartSlack)))
	var out []Firing
	for _, tl := range t.ids() {
		since := clock.Ticks(tl.started.Add(-StartSlack))
		cur := map[Key]Usage{}
		own := map[Key]Proc{}
		for _, p := range all {
			if p.Start >= since {
				cur[p.Key()] = Usage{p.CPU, p.IO}
				own[p.Key()] = p
			}
		}
		if Gained(tl.last, cur) {
			tl.lastActive, tl.base = now, cur
		}
		tl.last, tl.procs = cur, own
		if len(cur) > 0 {
			tl.hasProcs = true
		}
		v := Judge(now.Sub(tl.started), now.Sub(tl.lastActive), t.cfg.ToolTimeout, t.cfg.Window, len(cur) > 0)
		if v == Hung && !tl.fired {
			tl.fired = true
			out = append(out, Firing{Tool: t.infoLocked(tl, now), IdleFor: now.Sub(tl.lastActive)})
		}
		if v != Hung {
			tl.fired = false // busy again: a later hang fires again
		}
	}
	return out
}

// ids is the tracked tools, oldest first.
func (t *Tracker) ids() []*tool {
	out := make([]*tool, 0, len(t.tools))
	for _, tl := range t.tools {
		out = append(out, tl)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].started.Equal(out[j].started) {
			return out[i].started.Before(out[j].started)
		}
		return out[i].id < out[j].id
	})
	return out
}

// ActiveWithin reports whether a tracked tool call's subtree gained CPU
// or I/O within d before now: a busy tool, which the progress rule must
// not call a hung turn however quiet its events are.
func (t *Tracker) ActiveWithin(now time.Time, d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tl := range t.tools {
		if tl.hasProcs && len(tl.last) > 0 && now.Sub(tl.lastActive) < d {
			return true
		}
	}
	return false
}

// Tools is every tracked tool call with its subtree as last sampled, oldest
// first, at most max (the rest are left out).
func (t *Tracker) Tools(now time.Time, max int) []ToolInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []ToolInfo
	for _, tl := range t.ids() {
		if len(out) >= max {
			break
		}
		out = append(out, t.infoLocked(tl, now))
	}
	return out
}

func (t *Tracker) infoLocked(tl *tool, now time.Time) ToolInfo {
	info := ToolInfo{
		ID: tl.id, Title: tl.title, AgeMs: now.Sub(tl.started).Milliseconds(), HadProcs: tl.hasProcs,
		IdleMs:  now.Sub(tl.lastActive).Milliseconds(),
		Verdict: Judge(now.Sub(tl.started), now.Sub(tl.lastActive), t.cfg.ToolTimeout, t.cfg.Window, len(tl.last) > 0).String(),
	}
	procs := make([]Proc, 0, len(tl.procs))
	for _, p := range tl.procs {
		procs = append(procs, p)
	}
	sort.Slice(procs, func(i, j int) bool {
		if procs[i].CPU != procs[j].CPU {
			return procs[i].CPU > procs[j].CPU
		}
		return procs[i].PID < procs[j].PID
	})
	if len(procs) > MaxEvidenceProcs {
		info.ProcsOmitted = len(procs) - MaxEvidenceProcs
		procs = procs[:MaxEvidenceProcs]
	}
	for _, p := range procs {
		b := tl.base[p.Key()]
		info.Procs = append(info.Procs, ProcDelta{
			PID: p.PID, PPID: p.PPID, Comm: p.Comm, Cmdline: Cmdline(t.cfg.ProcRoot, p.PID),
			CPUMs: ticksMs(p.CPU - min(b.CPU, p.CPU)), IOBytes: int64(p.IO - min(b.IO, p.IO)),
			CPUTotalMs: ticksMs(p.CPU), IOTotal: int64(p.IO),
		})
	}
	return info
}

func ticksMs(t uint64) int64 { return int64(t) * clockTick.Milliseconds() }
