package stable

import (
	"fmt"

	"github.com/avenor-go/avenor/host/control/httpdebug"
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
	return debugTarget{TableTarget: rt.debug, rt: rt}, true
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

// debugTarget is one runtime: the method table's runtime (its entry as
// status, its cancel and answers) through the adapter's subscriptions
// (replay, de-duplication, an end once the runtime is gone), refusing a
// runtime that is gone with 404.
type debugTarget struct {
	*httpdebug.TableTarget
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

// Subscribe implements httpdebug.Target.
func (t debugTarget) Subscribe(opts httpdebug.SubscribeOptions) (httpdebug.Subscription, error) {
	if err := t.gone(); err != nil {
		return nil, err
	}
	return t.TableTarget.Subscribe(opts)
}

// Cancel implements httpdebug.Target: the running run (or loop) ends
// cancelled; a parked runtime has nothing to cancel.
func (t debugTarget) Cancel() error {
	if err := t.gone(); err != nil {
		return err
	}
	return t.TableTarget.Cancel()
}

// AnswerPermission implements httpdebug.Target.
func (t debugTarget) AnswerPermission(requestID, optionID, message string) error {
	if err := t.gone(); err != nil {
		return err
	}
	return t.TableTarget.AnswerPermission(requestID, optionID, message)
}

// newDebugTarget is the runtime's adapter target over its method-table
// runtime; closeStream ends it.
func newDebugTarget(rt *runtime) *httpdebug.TableTarget {
	return httpdebug.NewTableTarget(tableTarget{rt}, rt.run.Pending)
}
