package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Bounds of the control surface.
const (
	// MaxQueuedPrompts bounds the prompt queue of one run.
	MaxQueuedPrompts = 64
)

// Errors of the control surface.
var (
	ErrEmptyPrompt = errors.New("prompt text is empty")
	ErrQueueFull   = errors.New("prompt queue is full")
	ErrRunEnded    = errors.New("the run has ended")
	// ErrStopping: the run was cancelled, interrupted or timed out and is
	// ending its turn; a prompt now would never run (it used to be
	// accepted and dropped). Wrapped with the cause.
	ErrStopping = errors.New("the run is stopping and takes no new prompt")
)

// turnControl holds what the control plane asks of the turn loop: queued
// prompts, an interrupt's text, and the run's cancel.
type turnControl struct {
	mu        sync.Mutex
	n         int
	queue     []string
	interText *string
	interrupt chan struct{} // one pending interrupt wakes the turn
	runCancel context.CancelCauseFunc
	// runCtx is the run's context once Run has begun: when it is done the
	// run is stopping and refuses prompts.
	runCtx context.Context
	ended  bool
	// done: the run is over (finish); restart: Restart stopped it before
	// that, for a fresh process.
	done, restart bool
}

func (c *turnControl) init() { c.interrupt = make(chan struct{}, 1) }

func (c *turnControl) setRunCancel(f context.CancelCauseFunc) {
	c.mu.Lock()
	c.runCancel = f
	c.mu.Unlock()
}

func (c *turnControl) setRunContext(ctx context.Context) {
	c.mu.Lock()
	c.runCtx = ctx
	c.mu.Unlock()
}

// refusedLocked says why a prompt cannot be taken now, nil when it can;
// c.mu is held.
func (c *turnControl) refusedLocked() error {
	if c.ended {
		return ErrRunEnded
	}
	if c.runCtx != nil && c.runCtx.Err() != nil {
		return fmt.Errorf("%w: %v", ErrStopping, context.Cause(c.runCtx))
	}
	return nil
}

// next numbers the next turn (1-based, across attempts).
func (c *turnControl) next() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

// following picks the next turn's text: an interrupt's text first, else a
// queued prompt after a clean turn (docs/run.md#multi-turn), else after a clean
// turn what followUp (Options.FollowUp, may be nil) asks for.
func (c *turnControl) following(interrupted, clean bool, followUp func() (string, bool)) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.interText != nil {
		t := *c.interText
		c.interText = nil
		select { // the wake-up was for this text; the next turn starts clean
		case <-c.interrupt:
		default:
		}
		return t, true
	}
	if interrupted {
		return "", false
	}
	if clean && len(c.queue) > 0 {
		t := c.queue[0]
		c.queue = c.queue[1:]
		return t, true
	}
	if clean && followUp != nil {
		if t, ok := followUp(); ok && t != "" {
			return t, true
		}
	}
	c.ended = true
	return "", false
}

// finish refuses further prompts (and restarts): the run is over. It
// reports whether Restart stopped the run before, and the prompts still
// queued then.
func (c *turnControl) finish() (restart bool, queued []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended, c.done = true, true
	if c.restart {
		queued = c.queue
	}
	c.queue = nil
	return c.restart, queued
}

// Prompt queues text to run after the current turn ends cleanly; it never
// pre-empts the turn in flight.
func (r *Runner) Prompt(text string) error {
	if text == "" {
		return ErrEmptyPrompt
	}
	c := &r.turns
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refusedLocked(); err != nil {
		return err
	}
	if len(c.queue) >= MaxQueuedPrompts {
		return ErrQueueFull
	}
	c.queue = append(c.queue, text)
	return nil
}

// InterruptAndPrompt cancels the turn in flight and continues the session
// with text; keepQueue false drops the queued prompts.
func (r *Runner) InterruptAndPrompt(text string, keepQueue bool) error {
	if text == "" {
		return ErrEmptyPrompt
	}
	c := &r.turns
	c.mu.Lock()
	if err := c.refusedLocked(); err != nil {
		c.mu.Unlock()
		return err
	}
	c.interText = &text
	if !keepQueue {
		c.queue = nil
	}
	c.mu.Unlock()
	r.status.update(func(s *Status) { s.TurnState = TurnCancelling })
	select {
	case c.interrupt <- struct{}{}:
	default:
	}
	return nil
}

// Cancel ends the run as if interrupted (SIGINT): stop reason cancelled, 130.
func (r *Runner) Cancel() {
	c := &r.turns
	c.mu.Lock()
	f := c.runCancel
	c.mu.Unlock()
	if f != nil {
		f(ErrInterrupted)
	}
}

// ErrNotRunning: Restart before the run began (Run not called yet).
var ErrNotRunning = errors.New("the run has not begun")

// Restart stops the run for its owner to go on in a fresh plugin process
// on the same session: the run's context is cancelled with ErrRestart, the
// turn in flight is cancelled as on Cancel (the plugin gets CancelBudget
// to end it), the plugin and its runtime are stopped, and Run returns
// Result.Restarted — with no session.end for the stopped turn, no retry
// and no sentinel. Once Restart returns nil, Run returns Restarted even if
// its turn ended on its own meanwhile, unless a timeout or cancel stopped
// the run first (it then ends as usual). It refuses (ErrNotRunning,
// ErrRunEnded, ErrStopping) a run that has not begun, is over, or is
// already stopping (cancelled, timed out, restarting): it then changes
// nothing.
func (r *Runner) Restart() error {
	c := &r.turns
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.done:
		return ErrRunEnded
	case c.runCancel == nil:
		return ErrNotRunning
	case c.runCtx != nil && c.runCtx.Err() != nil:
		return fmt.Errorf("%w: %v", ErrStopping, context.Cause(c.runCtx))
	}
	c.restart = true
	c.runCancel(ErrRestart)
	return nil
}

// Turns is how many turns the run has numbered (begun), Options.TurnsBefore
// included.
func (r *Runner) Turns() int {
	c := &r.turns
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Status is the run's status snapshot.
func (r *Runner) Status() Status {
	return r.status.snapshot()
}
