package runtime

import (
	"errors"
	"fmt"
)

// Fault says whose fault an error is, so the host can tell the user what to fix.
type Fault string

const (
	FaultUser    Fault = "user"    // bad input: flags, config, a missing session id
	FaultRuntime Fault = "runtime" // the runtime CLI: missing, wrong version, crashed
	FaultPlugin  Fault = "plugin"  // a bug or crash in the plugin itself
)

// Error is an error with a fault. Backends return it from Open and Prompt.
type Error struct {
	Fault   Fault
	Message string
}

func (e *Error) Error() string { return e.Message }

// Errorf builds an *Error.
func Errorf(fault Fault, format string, args ...any) *Error {
	return &Error{Fault: fault, Message: fmt.Sprintf(format, args...)}
}

// FaultOf returns the fault of err, FaultPlugin when it carries none.
func FaultOf(err error) Fault {
	var e *Error
	if errors.As(err, &e) && e.Fault != "" {
		return e.Fault
	}
	return FaultPlugin
}

var (
	// ErrSessionNotFound: the resume id names no session this backend knows.
	ErrSessionNotFound = errors.New("session not found")
	// ErrPermissionPending: a second permission request while one is pending.
	ErrPermissionPending = errors.New("another permission request is already pending")
)
