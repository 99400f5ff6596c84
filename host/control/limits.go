package control

import "time"

// Bounds of the control socket's listener (against fd exhaustion).
const (
	// MaxConnections bounds the open connections of one control socket. A
	// harness needs a few (an owner, some subscribers) and every `avenor
	// await` or `avenor control` of an agent holds one while it runs; 128
	// is far above that and stays below half of 256, the smallest file
	// limit in common use (macOS's default), so a flood of connections
	// cannot take the descriptors plugins, logs and the owner's next
	// connection need. A connection over the cap is accepted, answered one
	// JSON-RPC error line (-32000, id null) and closed.
	MaxConnections = 128
	// ReservedConnections of MaxConnections are kept for other processes:
	// one peer process (its pid, SO_PEERCRED) may hold at most
	// MaxConnectionsPerProcess, so a client that opens connections without
	// bound (an `avenor mcp` with many waits, a leak) cannot lock the owner
	// or `avenor control list` out. 8 is enough for a harness's owner
	// connection and a few one-shot commands.
	ReservedConnections = 8
	// MaxConnectionsPerProcess bounds the open connections of one peer
	// process. A connection over it is refused as one over MaxConnections
	// is: one JSON-RPC error line (-32000, id null), then closed.
	MaxConnectionsPerProcess = MaxConnections - ReservedConnections
	// AcceptBackoffMin is the first pause after a failed accept (EMFILE and
	// the like); each further failure doubles it up to AcceptBackoffMax. A
	// successful accept resets it. Without it a listener out of descriptors
	// spins a core and floods the log.
	AcceptBackoffMin = 5 * time.Millisecond
	// AcceptBackoffMax is the longest pause between failed accepts.
	AcceptBackoffMax = time.Second
	// AcceptLogInterval: failed accepts and refused connections are logged
	// at most once per interval each, with the number left unlogged since.
	AcceptLogInterval = 10 * time.Second
	// MaxPendingRequestBytes bounds what all connections of one socket
	// hold together in request lines not finished yet, above the 64 KiB
	// each keeps (its reader and its line buffer, 128 KiB a connection at
	// most, 16 MiB for MaxConnections). One line may be MaxRequestLine
	// (4 MiB), so 16 may be read at once; a connection whose line would
	// pass the bound is answered one JSON-RPC error (-32000) and closed.
	// Without it, 126 connections each sending 4 MiB without a newline
	// held 838 MB.
	MaxPendingRequestBytes = 64 << 20
	// ReturnMemoryAfter: once connections let go of this many bytes of
	// long-line buffers, the memory is handed back to the system (not kept
	// by the Go runtime for reuse), at most once per ReturnMemoryInterval.
	ReturnMemoryAfter = 4 << 20
	// ReturnMemoryInterval spaces the returns: each is a full collection.
	ReturnMemoryInterval = time.Second
)
