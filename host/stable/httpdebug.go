package stable

import (
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
	return rt.run.DebugTarget(), true
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
