// Package mcpserver is `avenor mcp`: an MCP server (Model Context Protocol,
// through github.com/modelcontextprotocol/go-sdk) that lets a coding agent
// spawn, watch, answer and follow up other agents, each a runtime of an
// `avenor stable` supervisor (docs/mcp.md, docs/mcp.md#the-supervisor; reference
// mcp-board-original.md §1).
//
// It is a thin front door. Everything a run does happens in the supervisor,
// reached only through the public control client (package client); this
// package owns what the original's MCP server owned:
//
//   - the tools and their exact names, params, results and errors: the
//     original's seven run tools (avenor_spawn, avenor_status, avenor_result,
//     avenor_answer_permission, avenor_events, avenor_follow_up,
//     avenor_shutdown) and two more (avenor_cancel, avenor_list_backends).
//     Params are typed structs whose schema refuses unknown keys. The
//     original's workflow tools are not served: durable workflows do not
//     exist here yet;
//   - acquiring the supervisor (supervisor.go): lazily on the first tool
//     call, by dialling --supervisor-socket or by autostarting `avenor stable
//     --control-socket <sock> --idle-timeout <d>` (attaching instead when a
//     healthy supervisor already answers there); one persistent connection
//     per supervisor, which is therefore the owner of every mutation
//     (docs/control-protocol.md#ownership); a dead connection is dialled again, a dead autostarted
//     supervisor started anew;
//   - the run registry (registry.go): one small JSON record per run in a
//     private directory under avenor's state directory, keyed by the
//     supervisor's socket, so that a restarted `avenor mcp`, or a second one,
//     finds every run, its event log, its sentinel and its follow-ups (the
//     original's registry lived and died with its process);
//   - the status vocabulary an agent reads (status.go: running, waiting,
//     done, failed, timeout, killed) and the waits of avenor_status wait_for
//     and avenor_result (wait.go), which share one subscribed connection per
//     supervisor (watch.go) instead of holding one each;
//   - the tools' explicit schemas (schemas.go): object schemas with a type
//     for every property, as the official MCP SDKs require;
//   - the readiness check before a spawn (readiness.go): the backend is
//     resolved as the supervisor would (host/run) and its plugin's Check
//     asked, so a missing or logged-out runtime CLI fails the tool call with
//     the plugin's hint instead of spawning a run that cannot start;
//   - the HTTP transport's guard (http.go): loopback Host and browser Origin
//     only, unless allow-listed, and a bearer token compared in constant
//     time.
//
// Imported by cmd/avenor (avenor mcp) and by tests; nothing else should
// need it.
package mcpserver
