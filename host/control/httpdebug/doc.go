// Package httpdebug owns the HTTP/SSE debug adapter of docs/control-protocol.md#http-debug
// (`--http-debug`): a loopback-only HTTP server beside the control socket
// that shows a runtime's status, streams its events as Server-Sent Events,
// cancels it and answers its permission requests, for a human with curl or a
// browser and for scripts.
//
// Security is the point of most of the code. The address must bind to a
// loopback interface — numeric addresses are checked, `:port` and
// `localhost` become 127.0.0.1, any other host name is resolved and every
// address it resolves to must be loopback — else [Start] fails. Every
// request is checked again: the TCP peer must be loopback (403 forbidden),
// its Host header must name a loopback address (421, against DNS
// rebinding), and it must carry the per-process token, 16 random bytes in hex, in the
// X-Avenor-Token header (or, on /events only, as ?token=, since a browser's
// EventSource cannot set headers); 401 unauthorized otherwise. The token
// is printed to stderr only when the caller says stderr is a terminal, and
// written to [Config.TokenFile] (0600) for scripts, which cannot read one.
// A refused request closes its connection; idle keep-alive connections
// close after [IdleTimeout], and at most [MaxConnections] are open.
//
// The adapter holds interfaces only: a [Target] is one runtime (status,
// events, cancel, permission answers) and a [Supervisor] many of them by id.
// [TableTarget] makes a Target of any runtime of the control method table
// (the run of `avenor run`, a stable runtime); `avenor stable` serves a
// Supervisor, which turns on the stable routes (/status/<id>,
// /cancel/<id>, /events?runtime_id=, GET /runtimes).
//
// Imported by cmd/avenor. Harness authors use the control socket (package
// client); this adapter is for debugging.
package httpdebug
