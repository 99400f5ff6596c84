package stable

import (
	"errors"
	"fmt"

	"github.com/avenor-go/avenor/host/control"
	hostrun "github.com/avenor-go/avenor/host/run"
)

// Errors of the supervisor.
var (
	// ErrUnknownRuntime: no runtime of this supervisor has the id (it never
	// existed, or it was reaped after its parked timeout).
	ErrUnknownRuntime = errors.New("runtime not found")
	// ErrShuttingDown: the supervisor is stopping and starts nothing new.
	ErrShuttingDown = errors.New("the supervisor is shutting down; it starts no new runtime or turn")
	// ErrIdempotencyMismatch: an idempotency key came back with other
	// parameters (docs/control-protocol.md#spawn).
	ErrIdempotencyMismatch = errors.New("idempotency key reused with different parameters")
	// ErrIdempotencyFull: every one of the IdempotencyCapacity keys the
	// store holds belongs to a spawn still in flight (finished ones are
	// evicted, oldest first, to make room).
	ErrIdempotencyFull = errors.New("idempotency capacity exhausted")
	// ErrSessionLost and ErrRuntimeEnded refuse a follow-up (host/run's).
	ErrSessionLost  = hostrun.ErrSessionLost
	ErrRuntimeEnded = hostrun.ErrRuntimeEnded
	// ErrNotDurable: the supervisor could not write its state file (a full
	// disk), so it starts nothing a successor could not recover: a spawn or
	// follow-up prompt is refused, nothing of it runs.
	ErrNotDurable = errors.New("the supervisor cannot make this durable: its state file could not be written")
)

// Capacity sources of the typed capacity error (docs/stable.md#limits).
const (
	SourceLocal = "local"
	SourceTree  = "tree"
)

// capacityError is the typed, retryable capacity error of docs/stable.md#limits:
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

// treeFull is a full tree budget's error (hostrun.TreeBudget.Reserve).
func treeFull(limit, active int) error { return capacityError(SourceTree, limit, active) }

// unknownRuntime answers a runtime_id that names no runtime: on the socket
// -32000 with the original's text, runtime "rt_9" not found (contract
// docs/control-protocol.md#errors: the params decoded, the method's lookup failed), the fix in
// error.data; ErrUnknownRuntime for errors.Is.
func unknownRuntime(id string) error {
	return &notFoundError{id: id, rpc: &control.Error{Code: control.CodeServerError, Message: notFoundText(id), Data: map[string]any{
		"runtime_id": id, "detail": "no runtime of this supervisor has that id (it never existed, or it was reaped after --parked-timeout); avenor control list shows the runtimes",
	}}}
}

func notFoundText(id string) string { return fmt.Sprintf("runtime %q not found", id) }

type notFoundError struct {
	id  string
	rpc *control.Error
}

func (e *notFoundError) Error() string   { return notFoundText(e.id) }
func (e *notFoundError) Unwrap() []error { return []error{ErrUnknownRuntime, e.rpc} }
