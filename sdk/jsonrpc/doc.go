// Package jsonrpc is a JSON-RPC 2.0 connection over a runtime's stdio, for
// plugins whose runtime speaks it (ACP agents, codex app-server, an MCP
// sidecar): message types and id handling, bounded lines and
// Content-Length framing read from the same stream, requests and
// notifications served in stream order, calls with their answers, and
// $/cancel_request.
//
// sdk/acp builds the ACP client on it; plugins import it directly for
// runtimes that speak JSON-RPC without ACP.
package jsonrpc
