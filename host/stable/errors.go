package stable

import (
	"errors"
	"fmt"

	"github.com/avenor-go/avenor/host/control"
)

// Errors of the supervisor.
var (
	// ErrUnknownRuntime: no runtime of this supervisor has the id (it never
	// existed, or it was reaped after its parked timeout).
	ErrUnknownRuntime = errors.New("runtime not found")
	// ErrShuttingDown: the supervisor is stopping and starts nothing new.
	ErrShuttingDown = errors.New("the supervisor is shutting down; it starts no new runtime or turn")
	// ErrIdempotencyMismatch: an idempotency key came back with other
	// parameters (contract §5.6).
	ErrIdempotencyMismatch = errors.New("idempotency key reused with different parameters")
	// ErrIdempotencyFull: the idempotency store holds 1024 live keys.
	ErrIdempotencyFull = errors.New("idempotency capacity exhausted")
	// ErrSessionLost: a parked runtime's in_process session died with its
	// plugin and cannot be continued.
	ErrSessionLost = errors.New("session lost")
)

// Capacity sources of the typed capacity error (contract §8).
const (
	SourceLocal = "local"
	SourceTree  = "tree"
)

// capacityError is the typed, retryable capacity error of contract §8:
// {"source","retryable":true,"limit","active"} in error.data.
func capacityError(source string, limit, active int) *control.Error {
	msg := fmt.Sprintf("max runtimes (%d) reached", limit)
	if source == SourceTree {
		msg = fmt.Sprintf("tree budget (%d) reached", limit)
	}
	return &control.Error{Code: control.CodeServerError, Message: msg, Data: map[string]any{
		"source": source, "retryable": true, "limit": limit, "active": active,
	}}
}

// unknownRuntime answers a runtime_id that names no runtime: -32602 on the
// socket, ErrUnknownRuntime for errors.Is.
func unknownRuntime(id string) error {
	return &notFoundError{id: id, rpc: control.InvalidParams(fmt.Sprintf("%v: %q (avenor control list shows the runtimes)", ErrUnknownRuntime, id))}
}

type notFoundError struct {
	id  string
	rpc *control.Error
}

func (e *notFoundError) Error() string   { return fmt.Sprintf("%v: %s", ErrUnknownRuntime, e.id) }
func (e *notFoundError) Unwrap() []error { return []error{ErrUnknownRuntime, e.rpc} }
