package jsonrpc

import "errors"

var (
	// ErrClosed: the peer's output ended (it exited or was stopped), so no
	// answer can come. Errors wrapping it say why when known.
	ErrClosed = errors.New("jsonrpc: the connection to the peer is closed")
	// ErrWithdrawn is the cause of a request context the peer cancelled
	// with $/cancel_request.
	ErrWithdrawn = errors.New("jsonrpc: the peer withdrew its request ($/cancel_request)")
)
