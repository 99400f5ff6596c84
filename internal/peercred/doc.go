// Package peercred tells who is at the other end of a Unix socket: the
// kernel's word for the peer process's uid and pid (SO_PEERCRED on Linux,
// LOCAL_PEERCRED and LOCAL_PEERPID on macOS). Both sides of the control
// socket ask it — the server before it serves a connection, a client
// before it sends anything — so the one system call lives here, once.
package peercred
