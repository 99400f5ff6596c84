// Package agentproc runs one agent CLI (claude, codex, gemini, ...) as a child
// of a plugin and owns everything about that child that is easy to get wrong:
//
//   - its process group: the CLI is started in a group of its own, so Stop and
//     KillGroup reach the helpers it spawned, not just the CLI itself;
//   - its whole tree: the CLI runs in a cgroup v2 of its own where one can be
//     created (NewCgroup), and it and everything it starts carry a token in
//     TreeEnv; once the CLI is reaped its cgroup, its group and every marked
//     process are killed, so a shell tool that left the group with setsid
//     dies with its CLI. BecomeSubreaper, KillDescendants and KillMarked let
//     a plugin and the host do the same for a whole plugin;
//   - its lifetime: Pdeathsig kills the CLI if the plugin dies, ctx cancellation
//     stops it, and Stop escalates stdin close → SIGTERM → SIGKILL and always
//     reaps;
//   - its cleanup when nobody else is left: the CLI's process group is led by
//     a reaper (reaper.go), this binary run again, which outlives the plugin
//     and kills the CLI's tree when the plugin dies with its host;
//   - its pipes: stdout is framed into lines with a hard bound per line, so a
//     runaway CLI cannot make the plugin buffer gigabytes; stderr is logged and
//     its tail kept for crash reports;
//   - the goroutines that read those pipes, which all end when the process is
//     gone.
//
// Spec.Sandbox launches the CLI inside a boundary (docs/sandbox.md), by the
// mechanism the host chose: bubblewrap (BwrapArgs) or Landlock. Landlock
// confines the process that applies it for good, so it is applied in a
// launcher, never in the plugin: the CLI is started as this binary run
// again with LandlockEnv set, and the package's init — which runs before
// the plugin's main, so the plugin needs no hook of its own — builds the
// ruleset (the deny list as read rules for its siblings, landlock.go),
// drops every capability, restricts itself and execs the CLI in its
// place. A launcher that cannot do all of it exits LandlockLauncherExit
// without running the CLI.
//
// WatchParent is the other direction: a plugin calls it to notice that the
// host died and shut down instead of lingering as an orphan.
//
// LineReader is the bounded framing on its own, for plugins that read lines
// from something other than a child's stdout (HTTP bodies, PTYs).
//
// Plugin (backend) authors import this package; the host uses its tree
// killing. Pdeathsig, cgroups, the subreaper and /proc walks are Linux-only;
// elsewhere it builds and owns a CLI through its process group alone.
package agentproc
