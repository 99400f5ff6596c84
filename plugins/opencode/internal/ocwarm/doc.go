// Package ocwarm warms a fresh `opencode acp` up for its first prompt.
//
// OpenCode builds its per-directory "location services" (file watcher,
// search, the tool registry) lazily, on the first request that needs them
// — in a new process, the first prompt, which then waits about a second
// for them. `opencode acp` also serves OpenCode's HTTP API on a loopback
// port of its own; a GET /file for the session's directory there builds
// them without a model request, and a GET /experimental/tool for the
// configured model sets the tools up (the shell tool finds its shell, each
// tool builds its description), which the first prompt would do first. Warm starts that request as soon as the
// session is open: a warm pool member is then ready when its spawn comes,
// and a cold spawn's prompt finds the work already under way.
package ocwarm
