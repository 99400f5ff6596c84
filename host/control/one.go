package control

import (
	"fmt"

	"github.com/avenor-go/avenor/host/event"
)

// PermissionAnswerer answers the pending permission request of a runtime
// (the permission broker's control route, BrokerAnswerer). Answer returns
// an error wrapping ErrNoPendingPermission when nothing is pending or
// requestID is not the pending request's.
type PermissionAnswerer interface {
	Answer(requestID, optionID, message string) error
	Pending() bool
}

// Bounds of history and replay (docs/control-protocol.md#methods, docs/control-protocol.md#subscribe).
const (
	DefaultHistoryLimit = 64
	MaxHistoryLimit     = 256
	// SubscriberQueue is each subscription's queue; a full queue drops its
	// oldest event and the subscriber gets subscriber.lagged.
	SubscriberQueue = event.DefaultQueue
)

// One is a supervisor of one: the method table over a single Target, the
// runtime of `avenor run --control-socket` (a one-shot run or a phased
// run). The control socket and the HTTP debug adapter serve the same one.
//
// A supervisor of one has one runtime, so runtime_id is never required
// (stable requires it for history, replay and after_seq); when given it
// must be RunID, else -32601 says so rather than answering for another
// runtime.
type One struct {
	Target Target
	// RunID is the run's id; a runtime_id param equal to it is accepted as
	// naming the only runtime. Default: none accepted.
	RunID string
}

// RegisterOne registers the control method table of `avenor run
// --control-socket` (docs/control-protocol.md#methods) on s over t: a
// supervisor of one whose default runtime is t. Call it before Start. The
// stable-only methods stay unregistered, so they answer -32601.
func RegisterOne(s *Server, t Target, runID string) {
	RegisterTable(s, One{Target: t, RunID: runID}, TableOptions{})
}

// Accept refuses a runtime_id naming anything but the one runtime.
//
// A runtime_id naming another runtime is a form only stable has (docs/control-protocol.md#methods), and
// a one-shot run answers stable-only forms -32601 (docs/control-protocol.md#errors), as the original
// does; the detail says how to call it instead.
func (o One) Accept(c *Call, runtimeID string) error {
	if runtimeID == "" || (o.RunID != "" && runtimeID == o.RunID) {
		return nil
	}
	return newError(CodeMethodNotFound, MsgMethodNotFound, fmt.Sprintf(
		"%s with runtime_id %q is a stable form: this one-shot avenor run controls one runtime; omit runtime_id", c.Method, runtimeID))
}

// Runtime is the one runtime, whatever the (accepted) id.
func (o One) Runtime(string) (Target, error) { return o.Target, nil }
