package stable

import (
	"errors"
	"fmt"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/control/httpdebug"
	"github.com/avenor-go/avenor/host/event"
	hostrt "github.com/avenor-go/avenor/host/runtime"
)

// HTTPDebug is the supervisor as the --http-debug adapter serves it
// (httpdebug.Config.Stable): GET /runtimes and /status list the runtimes,
// /status/<id>, /cancel/<id>, /events?runtime_id= and /answer-permission
// act on one.
func (s *Supervisor) HTTPDebug() httpdebug.Supervisor { return debugSupervisor{s} }

type debugSupervisor struct{ s *Supervisor }

// Runtime implements httpdebug.Supervisor.
func (d debugSupervisor) Runtime(id string) (httpdebug.Target, bool) {
	rt, err := d.s.lookup(id)
	if err != nil {
		return nil, false
	}
	return debugTarget{OneShot: rt.debug, rt: rt}, true
}

// List implements httpdebug.Supervisor: the list method's entries.
func (d debugSupervisor) List() any { return d.s.Runtimes() }

// SubscribeAll implements httpdebug.Supervisor.
func (d debugSupervisor) SubscribeAll() (httpdebug.Subscription, error) {
	sub, err := d.s.SubscribeAll()
	if err != nil {
		return nil, err
	}
	return sub, nil
}

// debugTarget is one runtime: the one-shot target's subscriptions (replay,
// de-duplication, an end once the runtime is gone) with the stable entry as
// its status and the stable errors.
type debugTarget struct {
	*httpdebug.OneShot
	rt *runtime
}

// gone is the adapter's not-found error when the runtime was reaped or the
// supervisor stopped it.
func (t debugTarget) gone() error {
	t.rt.mu.Lock()
	state := t.rt.state
	t.rt.mu.Unlock()
	if state == stateGone {
		return fmt.Errorf("%w: %s", httpdebug.ErrRuntimeNotFound, t.rt.id)
	}
	return nil
}

// Status implements httpdebug.Target: the runtime's list entry (§5.6).
func (t debugTarget) Status() any {
	_, children := t.rt.s.sorted()
	return t.rt.entry(children[t.rt.id])
}

// Subscribe implements httpdebug.Target.
func (t debugTarget) Subscribe(opts httpdebug.SubscribeOptions) (httpdebug.Subscription, error) {
	if err := t.gone(); err != nil {
		return nil, err
	}
	return t.OneShot.Subscribe(opts)
}

// Cancel implements httpdebug.Target: the running run (or loop) ends
// cancelled; a parked runtime has nothing to cancel.
func (t debugTarget) Cancel() error {
	if err := t.gone(); err != nil {
		return err
	}
	t.rt.cancel()
	return nil
}

// AnswerPermission implements httpdebug.Target.
func (t debugTarget) AnswerPermission(requestID, optionID, message string) error {
	if err := t.gone(); err != nil {
		return err
	}
	err := t.rt.s.AnswerPermission(t.rt.id, requestID, optionID, message)
	if errors.Is(err, ErrUnknownRuntime) {
		return fmt.Errorf("%w: %s", httpdebug.ErrRuntimeNotFound, t.rt.id)
	}
	return err
}

// debugRuntime is a runtime as its httpdebug.OneShot reads it.
type debugRuntime struct{ rt *runtime }

func (d debugRuntime) Status() hostrt.Status { return d.rt.runStatus() }
func (d debugRuntime) Cancel()               { d.rt.cancel() }
func (d debugRuntime) Events() *event.Writer { return d.rt.w }

// newDebugTarget is the runtime's one-shot target; closeStream ends it.
func newDebugTarget(rt *runtime) *httpdebug.OneShot {
	return httpdebug.NewOneShot(debugRuntime{rt}, control.BrokerAnswerer{Broker: rt.broker})
}

// runStatus is the current (or last) run's status.
func (rt *runtime) runStatus() hostrt.Status {
	rt.mu.Lock()
	r := rt.runner
	rt.mu.Unlock()
	if r == nil {
		return hostrt.Status{}
	}
	return r.Status()
}
