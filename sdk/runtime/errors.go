package runtime

import (
	"errors"
	"fmt"
	"time"
)

// Fault says whose fault an error is, so the host can tell the user what to fix.
type Fault string

const (
	FaultUser    Fault = "user"    // bad input: flags, config, a missing session id
	FaultRuntime Fault = "runtime" // the runtime CLI: missing, wrong version, crashed
	FaultPlugin  Fault = "plugin"  // a bug or crash in the plugin itself
)

// Code names a kind of failure that keeps its identity across the plugin
// wire (the proto's Error.code), so the host can tell it with errors.Is
// instead of reading the message.
type Code string

// Codes, each with its sentinel below.
const (
	CodeSessionNotFound   Code = "session_not_found"
	CodeUnsupported       Code = "unsupported"
	CodeRuntimeMissing    Code = "runtime_missing"
	CodeAuthRequired      Code = "auth_required"
	CodePermissionPending Code = "permission_pending"
	// CodeRateLimited: the provider refused the turn for a rate limit;
	// Error.ResetAt says when it lifts, when the runtime said so.
	CodeRateLimited Code = "rate_limited"
)

// Error is an error with a fault and, when it is one of the kinds above, a
// code. Backends return it from Open and Prompt. errors.Is(err,
// ErrSessionNotFound) holds for an *Error of that code, on either side of
// the wire.
type Error struct {
	Fault   Fault
	Message string
	Code    Code // empty: no particular kind
	// ResetAt is when a rate limit lifts (CodeRateLimited); zero when the
	// runtime did not say.
	ResetAt time.Time
}

// RateLimited is the error of a turn the provider refused for a rate
// limit that lifts at resetAt (zero: not said): a runtime fault with code
// rate_limited. A backend that returns it from Prompt, and declares
// CapRateLimitReset, lets the host wait and send the turn again.
func RateLimited(resetAt time.Time, format string, args ...any) *Error {
	e := Errorf(FaultRuntime, format, args...).WithCode(CodeRateLimited)
	e.ResetAt = resetAt
	return e
}

// ResetOf is when the rate limit of err lifts: its *Error's ResetAt;
// zero when err carries none.
func ResetOf(err error) time.Time {
	var e *Error
	if errors.As(err, &e) {
		return e.ResetAt
	}
	return time.Time{}
}

func (e *Error) Error() string { return e.Message }

// Is reports whether target is the sentinel of e's code.
func (e *Error) Is(target error) bool {
	s, ok := sentinels[e.Code]
	return ok && s == target
}

// Errorf builds an *Error. When an argument is one of the sentinels (or
// wraps one), the error takes its code: "session %q: %v", id,
// ErrSessionNotFound is a session_not_found error.
func Errorf(fault Fault, format string, args ...any) *Error {
	e := &Error{Fault: fault, Message: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			if c := CodeOf(err); c != "" {
				e.Code = c
				break
			}
		}
	}
	return e
}

// WithCode sets e's code and returns e.
func (e *Error) WithCode(c Code) *Error {
	e.Code = c
	return e
}

// CodeOf is err's code: an *Error's own, else that of a sentinel it wraps;
// empty when none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) && e.Code != "" {
		return e.Code
	}
	for c, s := range sentinels {
		if errors.Is(err, s) {
			return c
		}
	}
	return ""
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
	// ErrUnsupported: the backend or its runtime does not offer what was
	// asked (a flag, a mode, resuming).
	ErrUnsupported = errors.New("not supported")
	// ErrRuntimeMissing: the runtime CLI is not installed where it was
	// looked for.
	ErrRuntimeMissing = errors.New("runtime CLI not found")
	// ErrAuthRequired: the runtime needs the user to log in or set a key.
	ErrAuthRequired = errors.New("authentication required")
	// ErrRateLimited: the provider refused the turn for a rate limit.
	ErrRateLimited = errors.New("rate limited")
)

var sentinels = map[Code]error{
	CodeSessionNotFound:   ErrSessionNotFound,
	CodeUnsupported:       ErrUnsupported,
	CodeRuntimeMissing:    ErrRuntimeMissing,
	CodeAuthRequired:      ErrAuthRequired,
	CodePermissionPending: ErrPermissionPending,
	CodeRateLimited:       ErrRateLimited,
}
