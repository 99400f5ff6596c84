package httpdebug

import (
	"errors"
	"fmt"

	"github.com/avenor-go/avenor/host/control"
)

// Errors of the package.
var (
	// ErrNotLoopback: the address does not bind to a loopback interface.
	// The fault is the user's; the message says what is accepted.
	ErrNotLoopback = errors.New("must bind to a loopback interface (localhost, 127.0.0.1, or ::1)")
	// ErrBadAddress: the address is not host:port.
	ErrBadAddress = errors.New("is not host:port (e.g. 127.0.0.1:7777 or :7777)")
	// ErrNoTarget: Config has neither Run nor Stable, or both.
	ErrNoTarget = errors.New("http debug: exactly one of Config.Run and Config.Stable is required")
	// ErrRuntimeNotFound is returned (or wrapped) by a Supervisor's targets
	// when their runtime is gone; it answers 404 "runtime not found".
	ErrRuntimeNotFound = errors.New("runtime not found")
	// ErrNoPendingPermission is returned (or wrapped) by
	// Target.AnswerPermission when nothing is pending or the request id is
	// not the pending one's; it answers 409 "no pending permission". It is
	// the control socket's error, so one PermissionAnswerer serves both.
	ErrNoPendingPermission = control.ErrNoPendingPermission
)

// addrError is an address the adapter refuses, with the reason.
type addrError struct {
	addr   string
	reason error
	detail string
}

func (e *addrError) Error() string {
	msg := fmt.Sprintf("address %q %v", e.addr, e.reason)
	if e.detail != "" {
		msg += ": " + e.detail
	}
	return msg
}

func (e *addrError) Unwrap() error { return e.reason }
