// Package watch owns `avenor watch` (docs/watch.md): turning an NDJSON event
// log (docs/events.md) into one digest line per event, classifying events as MILESTONE,
// FINDING or ACTIVITY, and reading the log once or following it as it grows,
// with an optional cursor file so a second watch resumes where the first
// stopped.
//
// The pure parts are [ParseLine], [Excerpt], [Classify], [Summarize] and
// [Printer]; [Run] is the reader that ties them to a file (or a pipe) and a
// cursor. [Run] consumes complete lines only: a last line without its
// newline waits for it, so the cursor never points inside a line. Following,
// it tells from the events when the run that writes the log is over (a
// loop's or team's end event, a session.end nothing can follow, the
// sentinel, or a settle time after a session.end) rather than stopping at
// the first session.end: a loop, a retry and a multi-turn run write several.
// Its sleep between polls is injected ([Config.Sleep]) so tests drive it
// without real time.
//
// Imported by the command line (cmd/avenor). It depends on the standard
// library and host/sentinel (the exit-code map that says which stop reasons
// a retry or a next turn can follow), and never imports host/event: it reads
// the log a harness reads, nothing more.
package watch
