// Package ochttp is the opencode-http backend: an `opencode serve` driven
// over its HTTP routes and its /event SSE stream (docs/backends.md#opencode-http-plugin-opencode,
// runtime-protocols.md §2). It owns the HTTP client of one session, the
// bounded SSE parser, the reconnect-and-reconcile logic that makes up for
// OpenCode's lack of Last-Event-ID, the health wait that lets a session
// open against a server that is still starting (retries of
// GET /global/health, each on a fresh connection, within option
// health_timeout), and, when no server URL is given, the `opencode serve`
// it starts for the session (docs/backends.md#opencode-http-plugin-opencode).
//
// The plugin's main registers it; nothing else should import it.
package ochttp
