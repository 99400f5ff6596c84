// Package connlimit caps the connections an HTTP listener of avenor holds
// open, before any request is read and so before any token is checked:
// the `--http-debug` adapter, `avenor board` and `avenor mcp --transport
// http` each wrap their listener with Wrap. Without it a peer that never
// authenticates could open connections until the process ran out of
// descriptors and memory, and the owner's own request would time out.
//
// A connection over a cap is answered 503 with a line saying which cap,
// and closed at once rather than left in the backlog. Where the kernel
// tells the peer's uid (a loopback TCP peer, through sock_diag), peers of
// other users get at most Config.MaxPerPeer connections each and never the
// last Config.Reserve slots, so the owner still gets through while another
// user floods the port. The idle and slow-header timeouts that free the
// slots belong to the http.Server: Harden sets them.
package connlimit
