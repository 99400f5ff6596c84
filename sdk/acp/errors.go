package acp

import (
	"errors"

	"github.com/avenor-go/avenor/sdk/jsonrpc"
)

var (
	// ErrClosed: the agent's output ended (it exited or was stopped), so no
	// answer can come. It is jsonrpc.ErrClosed.
	ErrClosed = jsonrpc.ErrClosed
	// ErrWithdrawn is the cause of a request context the agent cancelled
	// with $/cancel_request. It is jsonrpc.ErrWithdrawn.
	ErrWithdrawn = jsonrpc.ErrWithdrawn
	// ErrUnsupported: the agent does not offer what was asked (a model or
	// mode switch, resuming a session).
	ErrUnsupported = errors.New("acp: not offered by the agent")
)
