package control

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/avenor-go/avenor/internal/peercred"
	"github.com/avenor-go/avenor/sdk/jsonrpc"
)

// JSON-RPC error codes of docs/control-protocol.md#errors: JSON-RPC 2.0's own (sdk/jsonrpc's),
// then avenor's. They are part of the protocol and must never change.
const (
	CodeParseError          = jsonrpc.CodeParseError
	CodeInvalidRequest      = jsonrpc.CodeInvalidRequest
	CodeMethodNotFound      = jsonrpc.CodeMethodNotFound
	CodeInvalidParams       = jsonrpc.CodeInvalidParams
	CodeServerError         = -32000
	CodeNoPendingPermission = -32001
	CodePermissionDenied    = -32010
	CodePromptUnsupported   = -32020
)

// Messages used with the codes (docs/control-protocol.md#errors). Server errors (-32000)
// carry the handler's error text instead.
const (
	MsgParseError          = "parse error"
	MsgInvalidRequest      = "invalid request"
	MsgMethodNotFound      = "method not found"
	MsgInvalidParams       = "invalid params"
	MsgNoPendingPermission = "no_pending_permission"
	MsgPermissionDenied    = "permission_denied"
)

// Errors of the server's lifecycle.
var (
	// ErrInUse: another live server answers on the socket path.
	ErrInUse = errors.New("control socket already in use")
	// ErrNotSocket: the socket path exists and is something else; avenor
	// never removes it.
	ErrNotSocket = errors.New("control socket path exists and is not a socket")
	// ErrSquatted: in a directory other users can write (a sticky one like
	// /tmp), the socket path is taken by another user's file.
	ErrSquatted = errors.New("control socket path is taken by another user")
	// ErrLockBusy: <socket>.control.lock stayed locked for LockWait.
	ErrLockBusy = errors.New("control socket lock is held by another process")
	// ErrServerClosed: Start after Close, or Start twice.
	ErrServerClosed = errors.New("control server closed")
	// ErrNoPendingPermission is returned (or wrapped) by a
	// PermissionAnswerer when nothing is pending or the request id does not
	// match; it answers -32001.
	ErrNoPendingPermission = errors.New(MsgNoPendingPermission)

	// errLineTooLong: a request line over MaxRequestLine; the connection
	// is answered -32600 and closed.
	errLineTooLong = errors.New("request line too long")
	// errBudget: the line buffers of all connections hold
	// MaxPendingRequestBytes; the connection is closed.
	errBudget = errors.New("request line buffers of all connections are full")
	// errNoPeerCred: the platform does not give peer credentials; the 0600
	// socket alone isolates it.
	errNoPeerCred = peercred.ErrUnavailable
)

// Error is a JSON-RPC error object. Handlers return it to choose the code;
// any other error answers -32000 with its text.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	// Data is optional detail, e.g. {"required":["text"]} or {"detail":"…"}.
	Data any `json:"data,omitempty"`
}

func (e *Error) Error() string {
	if d, ok := e.Data.(map[string]any); ok {
		if s, ok := d["detail"].(string); ok && s != "" {
			return fmt.Sprintf("%s (%d): %s", e.Message, e.Code, s)
		}
	}
	return fmt.Sprintf("%s (%d)", e.Message, e.Code)
}

func newError(code int, msg, detail string) *Error {
	e := &Error{Code: code, Message: msg}
	if detail != "" {
		e.Data = map[string]any{"detail": detail}
	}
	return e
}

// InvalidParams is a -32602 error with a detail saying what was wrong.
func InvalidParams(detail string) *Error {
	return newError(CodeInvalidParams, MsgInvalidParams, detail)
}

// MissingParams is a -32602 error listing required params that were absent.
func MissingParams(names ...string) *Error {
	return &Error{Code: CodeInvalidParams, Message: MsgInvalidParams, Data: map[string]any{"required": names}}
}

// toRPCError maps a handler error to the error object sent.
func toRPCError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, ErrNoPendingPermission) {
		return &Error{Code: CodeNoPendingPermission, Message: MsgNoPendingPermission}
	}
	return &Error{Code: CodeServerError, Message: err.Error()}
}

// rawNull is the JSON null used for absent ids and results.
var rawNull = json.RawMessage("null")
