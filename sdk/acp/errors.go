package acp

import "errors"

var (
	// ErrClosed: the agent's output ended (it exited or was stopped), so no
	// answer can come. Errors wrapping it say why when known.
	ErrClosed = errors.New("acp: the connection to the agent is closed")
	// ErrWithdrawn is the cause of a request context the agent cancelled
	// with $/cancel_request.
	ErrWithdrawn = errors.New("acp: the agent withdrew its request ($/cancel_request)")
	// ErrUnsupported: the agent does not offer what was asked (a model or
	// mode switch, resuming a session).
	ErrUnsupported = errors.New("acp: not offered by the agent")
)
