package peercred

import "errors"

// ErrUnavailable: the platform does not tell a socket's peer; a caller
// falls back to what it can check otherwise (the socket file's owner and
// mode).
var ErrUnavailable = errors.New("peer credentials are not available on this platform")
