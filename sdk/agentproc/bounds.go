package agentproc

import "time"

// Bounds and defaults. Each one caps memory or time that a misbehaving CLI
// could otherwise make the plugin spend.
const (
	// DefaultMaxLineBytes bounds one stdout line (Spec.MaxLineBytes). Agent CLIs
	// emit one JSON event per line and a single event can carry a whole file,
	// so the bound is generous; beyond it the line is discarded, not buffered.
	DefaultMaxLineBytes = 16 << 20

	// DefaultStderrTailBytes is how much of the end of stderr is kept for
	// diagnostics (Spec.StderrTailBytes): enough for a stack trace.
	DefaultStderrTailBytes = 64 << 10

	// MaxStderrLogLineBytes bounds one stderr line sent to the logger; longer
	// lines are logged as their size only (their tail is still in StderrTail).
	MaxStderrLogLineBytes = 64 << 10

	// OutputDrainIdle is how long output is still read after the CLI exits
	// while the pipes stay silent. A helper the CLI left behind can hold the
	// pipes open forever; without this bound Lines and Done would wait for it.
	OutputDrainIdle = 500 * time.Millisecond

	// DefaultCancelGrace is the grace of the Stop that ctx cancellation
	// triggers (Spec.CancelGrace).
	DefaultCancelGrace = 2 * time.Second

	// DefaultParentPollInterval is WatchParent's interval when given none.
	DefaultParentPollInterval = time.Second

	// CgroupRemoveWait bounds how long a runtime's cgroup is waited for to
	// empty after its tree was killed, before it is removed.
	CgroupRemoveWait = 2 * time.Second

	// ReaperPollInterval is how often a runtime's reaper checks that its
	// plugin lives where the kernel has no pidfds (Linux before 5.3; with
	// them it learns at once): the longest a tool may outlive a plugin
	// killed with its host, before the reaper kills it.
	ReaperPollInterval = 100 * time.Millisecond
)

// CgroupsEnv set to "off" makes NewCgroup fail, so runtimes are owned through
// their process group, the subreaper and TreeEnv alone (tests of the
// fallback, and systems where creating cgroups is unwelcome).
const CgroupsEnv = "AVENOR_CGROUPS"

// maxKillPasses bounds the walks of one tree kill: each pass finds what the
// previous one's victims forked before they died.
const maxKillPasses = 10

// maxTreeDepth bounds the ppid chain a walk follows.
const maxTreeDepth = 256

// maxTreeProcs bounds the processes one walk down the children lists
// visits.
const maxTreeProcs = 1 << 16

// reapBudget bounds the wait for killed orphans to be reaped.
const reapBudget = time.Second

// lineChunkBytes is the read size of a LineReader: the granularity at which an
// over-long line is discarded.
const lineChunkBytes = 64 << 10

// retainLineBytes: a LineReader keeps a line buffer up to this size for reuse
// and drops larger ones, so one huge line does not pin memory for the life of
// the process.
const retainLineBytes = 1 << 20
