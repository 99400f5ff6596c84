// Package acp is the client side of the Agent Client Protocol (ACP v1), shared
// by the avenor plugins whose runtimes speak it: opencode-acp, gemini-acp and
// cursor-acp.
//
// It owns everything between an agent CLI's stdio and sdk/runtime:
//
//   - the JSON-RPC 2.0 layer is sdk/jsonrpc (framing: NDJSON and
//     Content-Length, bounded lines; the connection: our requests with
//     bounded waits, the agent's handled strictly in arrival order, raw ids,
//     -32601 for what we do not serve); jsonrpc.go gives its names here;
//   - the ACP calls (client.go): initialize, authenticate, session/new,
//     session/load, session/resume, modes, models and config options,
//     session/prompt, session/cancel;
//   - the mappings to avenor's vocabulary: session/update → events exactly as
//     docs/events.md#backend-events (updates.go), session/request_permission → the host's
//     permission broker (permission.go), the prompt result → the turn's end
//     (result.go);
//   - a runtime.Session over one agent process (session.go), which the
//     plugins configure with a Config and extend with vendor methods
//     (Cursor's cursor/*), its turns run by sdk/turn, and a runtime.Backend
//     around it (backend.go; which binary, its environment and Check are
//     sdk/agentproc's, as for every runtime CLI).
//
// acptest builds a fake ACP agent (internal/fakeagent) that behaves like
// opencode acp, gemini --acp or Cursor's agent acp, for the plugins' tests.
//
// Why not github.com/coder/acp-go-sdk (v0.13.0, read in full): it routes only
// "_"-prefixed methods to extension handlers, so Cursor's blocking
// cursor/ask_question and cursor/create_plan would be answered "method not
// found"; it decodes session/update into typed structs, which loses the
// fields the contract copies through as-is and has no way to pass an unknown
// update kind on; its bufio.Scanner closes the whole connection on a line
// over 10 MiB instead of skipping it; it has no Content-Length framing; and
// a full notification queue closes the connection. What avenor needs of ACP
// v1 is small, so this package implements it directly.
//
// Plugin authors of ACP backends import this package; the host does not.
package acp
