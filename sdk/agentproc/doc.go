// Package agentproc runs one agent CLI (claude, codex, gemini, ...) as a child
// of a plugin and owns everything about that child that is easy to get wrong:
//
//   - its process group: the CLI is started in a group of its own, so Stop and
//     KillGroup reach the helpers it spawned, not just the CLI itself;
//   - its lifetime: Pdeathsig kills the CLI if the plugin dies, ctx cancellation
//     stops it, and Stop escalates stdin close → SIGTERM → SIGKILL and always
//     reaps;
//   - its pipes: stdout is framed into lines with a hard bound per line, so a
//     runaway CLI cannot make the plugin buffer gigabytes; stderr is logged and
//     its tail kept for crash reports;
//   - the goroutines that read those pipes, which all end when the process is
//     gone.
//
// WatchParent is the other direction: a plugin calls it to notice that the
// host died and shut down instead of lingering as an orphan.
//
// LineReader is the bounded framing on its own, for plugins that read lines
// from something other than a child's stdout (HTTP bodies, PTYs).
//
// Plugin (backend) authors import this package; the avenor host does not.
// It is Linux-only: process groups and Pdeathsig have no portable equivalent.
package agentproc
