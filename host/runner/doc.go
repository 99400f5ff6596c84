// Package runner runs one avenor runtime: launch the plugin, open or resume
// the session, run turns, watch the clock and the plugin, end every attempt
// with a session.end, retry with backoff and resume, and write the sentinel
// once after the last attempt.
//
// It holds no runtime-specific code: everything about a runtime's protocol
// lives in its plugin, reached through sdk/runtime interfaces.
package runner
