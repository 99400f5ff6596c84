package turn

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// DefaultGrace is Config.Grace's default: how long a cancelled turn may take
// to end before OnOverdue runs. The host kills a plugin whose turn has not
// ended within 5 s of its Cancel, so the backend must act before that.
const DefaultGrace = 3 * time.Second

// Errors of Begin: a *runtime.Error whose message holds one of these.
var (
	ErrClosed  = errors.New("the session is closed")
	ErrBusy    = errors.New("a turn is already running in this session")
	ErrGone    = errors.New("the runtime is gone")
	errNoBegin = errors.New("turn: End of a turn the runner did not begin")
)

// Config says what a Runner needs from its backend. The zero value works:
// no interrupt, no overdue action, no gate.
type Config struct {
	// Backend names the backend in errors, e.g. "pi".
	Backend string
	// Interrupt asks the runtime to stop t (session/cancel, turn/interrupt,
	// abort…). It runs once per turn, in the goroutine that cancelled it,
	// without the Runner's lock held; it must not block for long. Nil: the
	// backend watches Turn.Cancelled itself.
	Interrupt func(t *Turn)
	// Grace is how long a cancelled turn may take to end before OnOverdue;
	// <= 0 means DefaultGrace.
	Grace time.Duration
	// OnOverdue runs once when a cancelled turn has not ended within Grace
	// (it usually warns and kills the runtime's process group), before
	// Turn.Overdue is closed. Nil: Overdue is closed all the same.
	OnOverdue func(t *Turn)
	// Gate, when set, is opened when a turn begins and shut when it ends,
	// and closed by Close.
	Gate *Gate
}

// Runner is one session's turn lifecycle. Embed a *Runner in a session:
// its Cancel implements runtime.Session's, and its TurnStarting is what
// sdk/plugin calls when the host's Prompt arrives. All methods are safe for
// concurrent use.
type Runner struct {
	cfg Config

	mu       sync.Mutex
	cur      *Turn
	starting bool // the host's Prompt arrived; Begin has not run yet
	pending  bool // a Cancel arrived while starting
	closed   bool
	dead     error

	closeOnce sync.Once
}

// New returns a Runner with no turn in flight.
func New(cfg Config) *Runner {
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	return &Runner{cfg: cfg}
}

// Turn is the turn in flight.
type Turn struct {
	r         *Runner
	ctx       context.Context
	cancelCtx context.CancelFunc
	stopCtx   func() bool // stops the watch of Prompt's ctx

	cancelOnce sync.Once
	cancelled  chan struct{}
	overdue    chan struct{}
	ended      chan struct{}
	endOnce    sync.Once
}

// Context ends when the turn is cancelled or ends: what a permission ask
// or a vendor request made during the turn should use.
func (t *Turn) Context() context.Context { return t.ctx }

// Cancelled is closed once the turn is cancelled (Cancel, Close, or
// Prompt's context ending), including a cancel remembered from before it
// began.
func (t *Turn) Cancelled() <-chan struct{} { return t.cancelled }

// IsCancelled reports whether Cancelled is closed. Check it right after
// Begin: a turn that begins cancelled should end "cancelled" without
// starting any work.
func (t *Turn) IsCancelled() bool {
	select {
	case <-t.cancelled:
		return true
	default:
		return false
	}
}

// Overdue is closed when a cancelled turn has not ended within the grace,
// after OnOverdue ran: the turn should then end "cancelled" at once.
func (t *Turn) Overdue() <-chan struct{} { return t.overdue }

// TurnStarting marks that the host's Prompt has arrived: a Cancel from now
// until Begin is kept for the turn instead of being dropped. sdk/plugin
// calls it (runtime.TurnStarter) in the order the host's messages arrive,
// so a Cancel sent right after a Prompt is never lost to the race between
// the two; a Cancel while no turn runs or starts does nothing.
func (r *Runner) TurnStarting() {
	r.mu.Lock()
	r.starting = true
	r.mu.Unlock()
}

// Begin starts a turn. ctx is Prompt's: when it ends the turn is cancelled.
// It fails, with a *runtime.Error wrapping ErrClosed, ErrGone or ErrBusy,
// when the session is closed, its runtime is gone, or a turn is running.
// A cancel that arrived while the turn was starting leaves it cancelled
// (see Turn.IsCancelled); Interrupt is not called for it, since the runtime
// has not been asked anything yet.
func (r *Runner) Begin(ctx context.Context) (*Turn, error) {
	r.mu.Lock()
	pending := r.pending
	r.starting, r.pending = false, false
	switch {
	case r.closed:
		r.mu.Unlock()
		return nil, runtime.Errorf(runtime.FaultUser, "%s: %v", r.cfg.Backend, ErrClosed)
	case r.dead != nil:
		err := r.dead
		r.mu.Unlock()
		return nil, runtime.Errorf(runtime.FaultRuntime, "%s: %v: %v", r.cfg.Backend, ErrGone, err)
	case r.cur != nil:
		r.mu.Unlock()
		return nil, runtime.Errorf(runtime.FaultUser, "%s: %v", r.cfg.Backend, ErrBusy)
	}
	tctx, cancel := context.WithCancel(context.Background())
	t := &Turn{r: r, ctx: tctx, cancelCtx: cancel,
		cancelled: make(chan struct{}), overdue: make(chan struct{}), ended: make(chan struct{})}
	if pending {
		t.cancelOnce.Do(func() { close(t.cancelled); cancel() })
	}
	r.cur = t
	r.mu.Unlock()
	if r.cfg.Gate != nil {
		r.cfg.Gate.Open()
	}
	t.stopCtx = context.AfterFunc(ctx, func() { r.CancelTurn(t) })
	return t, nil
}

// Detach ends t in stream order without ending its work: from now on t is
// not the turn in flight (a Cancel does not reach it) and the gate is shut,
// so what the runtime says after its answer is held for the next turn.
// End calls it; a backend calls it earlier when the answer arrives.
func (r *Runner) Detach(t *Turn) {
	r.mu.Lock()
	if r.cur == t {
		r.cur = nil
		if r.cfg.Gate != nil {
			r.cfg.Gate.Shut() // no event of this turn lands after it ended
		}
	}
	r.mu.Unlock()
}

// End ends t: its context ends, its grace timer stops, and a Cancel no
// longer reaches it. Call it (deferred) once Begin succeeded.
func (r *Runner) End(t *Turn) {
	if t == nil || t.r != r {
		panic(errNoBegin)
	}
	t.endOnce.Do(func() {
		close(t.ended)
		t.stopCtx()
		t.cancelCtx()
	})
	r.Detach(t)
}

// Current is the turn in flight, or nil.
func (r *Runner) Current() *Turn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

// Cancel asks the turn in flight, or the one starting, to stop. It does
// not wait. It implements runtime.Session.Cancel.
func (r *Runner) Cancel(context.Context) error {
	r.mu.Lock()
	t := r.cur
	if t == nil && r.starting {
		r.pending = true
	}
	r.mu.Unlock()
	if t != nil {
		r.CancelTurn(t)
	}
	return nil
}

// CancelTurn cancels t once: Cancelled is closed, its context ends,
// Interrupt runs, and the grace before OnOverdue starts.
func (r *Runner) CancelTurn(t *Turn) {
	t.cancelOnce.Do(func() {
		close(t.cancelled)
		t.cancelCtx()
		if r.cfg.Interrupt != nil {
			r.cfg.Interrupt(t)
		}
		go r.watchGrace(t)
	})
}

func (r *Runner) watchGrace(t *Turn) {
	timer := time.NewTimer(r.cfg.Grace)
	defer timer.Stop()
	select {
	case <-t.ended:
		return
	case <-timer.C:
	}
	if r.cfg.OnOverdue != nil {
		r.cfg.OnOverdue(t)
	}
	close(t.overdue)
}

// Grace is how long a cancelled turn may take to end before OnOverdue.
func (r *Runner) Grace() time.Duration { return r.cfg.Grace }

// MarkDead records that the runtime is gone (the first reason wins): no
// turn begins after it.
func (r *Runner) MarkDead(err error) {
	r.mu.Lock()
	if r.dead == nil {
		r.dead = err
	}
	r.mu.Unlock()
}

// Dead is why the runtime is gone, or nil.
func (r *Runner) Dead() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dead
}

// Closed reports whether Close has run.
func (r *Runner) Closed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Close ends the session once, in this order: no turn begins any more, the
// turn in flight is cancelled (Interrupt), the gate is closed, then stop
// runs (stop the runtime, release what the session holds). Later calls do
// nothing.
func (r *Runner) Close(stop func()) {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.closed = true
		t := r.cur
		r.mu.Unlock()
		if t != nil {
			r.CancelTurn(t)
		}
		if r.cfg.Gate != nil {
			r.cfg.Gate.Close()
		}
		if stop != nil {
			stop()
		}
	})
}
