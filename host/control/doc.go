// Package control owns the control plane of docs/control-protocol.md: a JSON-RPC 2.0
// server speaking newline-delimited JSON on a Unix socket. It owns the
// socket's lifecycle (docs/control-protocol.md#transport-and-framing: 0700 parent directory, the flock'd
// <socket>.control.lock, stale-socket detection, a 0600 socket, unlinking
// only its own inode), the codec and error codes (docs/control-protocol.md#errors), first-mutator
// ownership (docs/control-protocol.md#ownership), and the one control method table (docs/control-protocol.md#methods, docs/control-protocol.md#status, docs/control-protocol.md#subscribe):
// status, result, subscribe, history, cancel, prompt, interrupt_and_prompt
// and answer_permission, registered by [RegisterTable] over a
// [Supervisor] of [Target] runtimes. `avenor run` is a supervisor of one
// ([One], [RegisterOne]) whose default runtime is the run; `avenor stable`
// registers the same table over its runtimes, so the two cannot answer
// differently, and the HTTP debug adapter (httpdebug) serves the same
// targets.
//
// The status snapshot of a runtime ([Status]) is this package's: the
// runner keeps it, the control plane shows it, and nothing here imports
// the runner.
//
// The server's methods are open: [Server.Handle] registers a [Method], so
// `avenor stable` adds only what is its own (spawn, list, send_to_parent,
// tree_budget, wait_for_capacity, shutdown) to the same server. A method
// that is not registered answers -32601, which is how a one-shot server
// refuses the stable-only methods.
//
// A connection's subscriptions are forwarded by one goroutine of its own,
// however many runtimes it follows ([Conn.Forward]): a subscriber costs
// the server two goroutines, not one per runtime.
//
// A connection from a peer whose uid differs from the server's is refused
// (SO_PEERCRED) and the reason logged; the 0600 socket is the primary
// isolation, this is a second line.
//
// The listener is bounded: at most [MaxConnections] are open, one
// more is answered an error line and closed, and so is one more of a peer
// process (SO_PEERCRED pid) holding [MaxConnectionsPerProcess] already, so
// [ReservedConnections] stay free for the owner; a failed accept (EMFILE) is
// retried after a pause growing from [AcceptBackoffMin] to
// [AcceptBackoffMax] and logged at most once per [AcceptLogInterval].
//
// Imported by host/run (the one-shot assembly) and host/stable. Harness
// authors use the client package instead.
package control
