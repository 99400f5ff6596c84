// Package control owns the control plane of contract §5: a JSON-RPC 2.0
// server speaking newline-delimited JSON on a Unix socket. It owns the
// socket's lifecycle (§5.1: 0700 parent directory, the flock'd
// <socket>.control.lock, stale-socket detection, a 0600 socket, unlinking
// only its own inode), the codec and error codes (§5.2), first-mutator
// ownership (§5.3), the method table and, for `avenor run --control-socket`,
// the one-shot methods (§5.4, §5.5, §5.7).
//
// The method table is open: [Server.Handle] registers a [Method], so
// `avenor stable` can add spawn, list, shutdown and the rest to the same
// server. A method that is not registered answers -32601, which is how a
// one-shot server refuses the stable-only methods.
//
// A connection from a peer whose uid differs from the server's is refused
// (SO_PEERCRED) and the reason logged; the 0600 socket is the primary
// isolation, this is a second line.
//
// Imported by cmd/avenor (run, and later stable). Harness authors use the
// client package instead.
package control
