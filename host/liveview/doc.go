// Package liveview renders a run's events for the person at the terminal:
// a compact live transcript on stderr — agent text as it streams, tool
// calls with their status, permission requests and how to answer them,
// retries, a status line with the phase, elapsed time and tokens — and an
// end summary (stop reason, exit code, duration, usage, where the log and
// the sentinel are).
//
// It reads the run's event stream through an [event.Subscription] of its
// own, so it never slows the event path: a view that falls behind loses its
// oldest queued events and says how many (subscriber.lagged), while the log,
// the control plane and the sentinel carry on untouched. A harness sees
// nothing of it: the view exists only when stderr is a terminal or a flag
// asks for it (avenor run's --progress and --quiet), and it never writes to
// stdout.
//
// Two renderings: [TTY] streams text in place with a redrawn status line and
// colour (off under NO_COLOR); [Plain] writes one line per event, for CI
// logs. Other text meant for stderr while a view runs (avenor's own
// messages, the logger) goes through [View.Writer], so it never lands in the
// middle of a status line.
//
// Imported by host/run (avenor run's view) and cmd/avenor (the runtime
// table of avenor control list); depends on host/event.
package liveview
