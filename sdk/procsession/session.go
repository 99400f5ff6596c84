package procsession

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/turn"
)

// Default sets *d to def when *d is zero or negative: a session config's
// zero duration means its default.
func Default(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// Config is what New needs; its zero value gives a runner without a gate
// that logs nowhere.
type Config struct {
	// Backend names the backend in the runner's errors and the gate's
	// dropped-events warning.
	Backend string
	// Host is the session's host: the gate holds events for it and its
	// logger is the default. May be nil only when MaxHeld is 0.
	Host runtime.Host
	// Logger, when set, is used instead of Host.Logger(); when both are
	// nil the session logs nowhere.
	Logger hclog.Logger
	// MaxHeld, when positive, gives the session a turn.Gate holding up to
	// MaxHeld events sent between turns; 0: no gate (a runtime that speaks
	// only inside turns).
	MaxHeld int
	// Grace, Interrupt and OnOverdue are the runner's (turn.Config): the
	// grace a cancelled turn gets (0: turn.DefaultGrace), how to interrupt
	// the runtime and what to do when a cancelled turn overstays.
	Grace     time.Duration
	Interrupt func(*turn.Turn)
	OnOverdue func(*turn.Turn)
}

// Skeleton is the common part of a process session: its logger, its gate
// (nil without Config.MaxHeld) and its turn runner, the gate wired in.
type Skeleton struct {
	Log    hclog.Logger
	Gate   *turn.Gate
	Runner *turn.Runner
}

// New builds the skeleton of one session.
func New(cfg Config) Skeleton {
	log := cfg.Logger
	if log == nil && cfg.Host != nil {
		log = cfg.Host.Logger()
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	sk := Skeleton{Log: log}
	tc := turn.Config{Backend: cfg.Backend, Grace: cfg.Grace, Interrupt: cfg.Interrupt, OnOverdue: cfg.OnOverdue}
	if cfg.MaxHeld > 0 {
		sk.Gate = turn.NewGate(cfg.Host, cfg.MaxHeld, cfg.Backend)
		tc.Gate = sk.Gate
	}
	sk.Runner = turn.New(tc)
	return sk
}

// Start starts the runtime's process with agentproc.Start, without a
// context: the process lives with the session, not with Open's ctx. Its
// failure is a *runtime.Error of FaultRuntime naming backend: a CLI that is
// not found says where it was looked for and what to install (spec's
// InstallHint) and carries CodeRuntimeMissing; any other failure names
// spec.Path.
func Start(backend string, spec agentproc.Spec) (*agentproc.Process, error) {
	proc, err := agentproc.Start(context.Background(), spec)
	if err == nil {
		return proc, nil
	}
	var nf *agentproc.NotFoundError
	if errors.As(err, &nf) {
		return nil, runtime.Errorf(runtime.FaultRuntime, "%s: the runtime CLI %q was not found %s; %s",
			backend, nf.Path, nf.Where(), nf.Hint).WithCode(runtime.CodeRuntimeMissing)
	}
	return nil, runtime.Errorf(runtime.FaultRuntime, "%s: starting %s: %v", backend, spec.Path, err)
}

// Capabilities is the capability table of a backend whose every session is
// one runtime process of its own: new sessions, prompts, cancel (the
// runner), event streaming and subprocess discovery (the session knows its
// one process and tells the host) hold by construction; more adds what the backend's runtime offers besides
// (resume, permission relay, model selection, prewarm). Chain With for a
// capability at another level.
func Capabilities(more ...runtime.Capability) runtime.CapabilityTable {
	return runtime.Supports(append([]runtime.Capability{
		runtime.CapNewSessions, runtime.CapPrompt, runtime.CapCancel, runtime.CapEventStreaming, runtime.CapSubprocessDiscovery,
	}, more...)...)
}

// Record tells host the runtime's process as soon as it runs, when the
// host keeps track of it (runtime.ProcessRecorder): should the plugin die
// during a slow handshake, the host still kills the runtime's group.
func Record(host runtime.Host, p runtime.ProcessInfo) {
	if r, ok := host.(runtime.ProcessRecorder); ok {
		r.RecordProcess(p)
	}
}

// Conn is the connection to the runtime (a jsonrpc.Conn): Close shuts its
// writing side, Done is closed once its reader has ended.
type Conn interface {
	Close()
	Done() <-chan struct{}
}

// Stop is how a session's runtime stops, run as the stop of its runner's
// Close (Runner.Close(stop.Run)), in this order: Conn closed, Proc
// stopped with its group within Grace per step, then the wait for Wait
// (Conn.Done() when Wait is nil and Conn is set), then Then.
type Stop struct {
	// Conn, when set, is closed first and its reader waited for last.
	Conn Conn
	// Proc is the runtime's process; nil: nothing to stop.
	Proc *agentproc.Process
	// Grace is agentproc.Process.Stop's grace for each step.
	Grace time.Duration
	// Wait, when set, is waited for once the process has stopped (e.g. the
	// session's own reader ending); otherwise Conn.Done().
	Wait <-chan struct{}
	// Log and What report Proc.Stop's outcome at debug level as What.
	Log  hclog.Logger
	What string
	// Then runs last: release what the session holds, log that it closed.
	Then func()
}

// Run stops the runtime in Stop's order.
func (s Stop) Run() {
	if s.Conn != nil {
		s.Conn.Close()
	}
	if s.Proc != nil {
		if err := s.Proc.Stop(s.Grace); err != nil && s.Log != nil {
			s.Log.Debug(s.What, "error", err)
		}
	}
	switch {
	case s.Wait != nil:
		<-s.Wait
	case s.Conn != nil:
		<-s.Conn.Done()
	}
	if s.Then != nil {
		s.Then()
	}
}
