// Package sentinel owns the completion sentinel of docs/run.md#sentinel and the
// exit-code ↔ stop-reason map of docs/run.md#exit-codes.
//
// The sentinel is the one file a harness polls to learn that a run is over:
// its first line is the status, and the line order is load-bearing, so the
// bytes produced by [Format] are pinned by golden tests. [Write] replaces the
// file atomically so a poller never reads half of it.
//
// The exit-code map ([ExitCode], [DefaultStopReason], [Retryable]) lives here
// because the sentinel and the process exit code must never disagree.
// [ReadLastSessionEnd] recovers the session id and stop reason from an event
// log for callers that only have the log.
//
// Imported by host/runner, host/loop and the command wiring; it has no
// dependencies beyond the standard library.
package sentinel
