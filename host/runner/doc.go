// Package runner runs one avenor runtime: launch the plugin, open or resume
// the session, run turns, watch the clock and the plugin, end every attempt
// with a session.end, retry with backoff and resume, and write the sentinel
// once after the last attempt. It tells its owner (host/run's runtime) the
// facts it acts on — a session opened, started, ended — typed, through an
// [Observer], and keeps the status snapshot (host/control's Status).
//
// It holds no runtime-specific code: everything about a runtime's protocol
// lives in its plugin, reached through sdk/runtime interfaces.
package runner
