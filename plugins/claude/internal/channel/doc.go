// Package channel is the claude-channel backend's bridge to a running
// Claude Code (docs/backends.md#claude-channel-plugin-claude-experimental): the broker, an HTTP server on 127.0.0.1 the
// backend owns, and the sidecar, the MCP stdio server Claude Code starts
// from .mcp.json (`avenor claude-channel …`, which execs this plugin).
//
//	backend ──Push──▶ broker ◀──/poll-control── sidecar ──notifications/claude/channel──▶ Claude
//	backend ◀─Events─ broker ◀──/report,/finish… sidecar ◀──tools/call avenor_*────────── Claude
//
// The sidecar speaks MCP itself (jsonrpc.go) rather than through
// github.com/modelcontextprotocol/go-sdk: that SDK (v1.8.0) refuses to send
// or route notifications outside its method table (ErrNotHandled for
// notifications/claude/channel), and answers initialize with the client's
// protocol version where the contract pins "2024-11-05".
//
// Every broker route but /health authenticates a run by run_id and its
// token (16 random bytes, hex) inside the JSON body (query parameters for
// GET), compared in constant time. The token is a secret: it is never
// logged, never put in an event, and never echoed in an error.
//
// Only the claude plugin imports this package.
package channel
