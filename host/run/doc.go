// Package run is the one front door of the host core.
//
//   - [Resolve]: every command and every stable spawn resolves its backend
//     here (config layers, the family mapping of [backends.<name>] plugin,
//     the project's plugins.lock, the finder), so that "pin, verify, then
//     exec" and the config hold the same way everywhere. The result is a
//     runtime.Backend, the one resolved-backend type.
//   - [LoadPhased]: loop and team configs and the backends their phases
//     name, loaded once for `avenor run --loop-file/--team-file` and for a
//     stable spawn's loop_file/team_file.
//   - [Runtime]: the one type that is a runtime ([New], or [Restore]
//     after a supervisor's restart) — its event writer and, for a stable
//     runtime, its own event log file, its permission broker, its runs (a
//     runner each, or the phases of a loop or team run, [Phased]), the
//     runner's typed facts, its status, session and result — and a
//     control.Target, which the control method table and the HTTP debug
//     adapter serve as it is. `avenor run` and every runtime of `avenor
//     stable` are one; the supervisor keeps only what is its own.
//   - A supervised runtime (Deps.Owner: every runtime of `avenor stable`):
//     its runs in the background one after another ([Runtime.Go],
//     [Runtime.GoPhased], each phase taking a slot of its owner's), parked
//     between them keeping the plugin that holds its session,
//     [Runtime.FollowUp] continuing that session or saying why it cannot,
//     its list entry, result and --http-debug target, and its durable
//     [Record]. Its [Owner] — the supervisor — decides admission, the reap
//     and how many parked runtimes keep a plugin, and hears of its changes;
//     the owner's lock is taken before the runtime's, never under it.
//   - [ResolveSpawn], [Spawned.Spec], [RecordSpec]: a supervised runtime's
//     Spec from its spawn's params, or from its record after a restart;
//     [Recover] restores it from that record (its turn re-attached,
//     continued or ended in error).
//     [Runtime.Restart] restarts its process on the same session (a
//     watchdog's restart, a sandbox widened after an approval): one stream,
//     one sentinel for the harness.
//   - [ReattachSession], [LogTail], [StopLingering]: a recovered runtime's
//     log tail and the plugin that may still hold its session.
//   - [Start]: `avenor run`'s runtime served as a supervisor of one on the
//     control socket and the HTTP debug adapter, run to its end.
//   - [Prepare]: `avenor run`'s command line ([Request]) made into a
//     validated [Spec] — the config under the flags, the roster, the
//     exclusive flags, the prompt, the working directory, the permission
//     broker — and its loop or team loaded ([Prepared.Phased]).
//   - [Command]: `avenor run` once its flags are parsed — the live view,
//     the event log destination, permissions asked at the terminal, the
//     HTTP debug adapter, the FAILED sentinel of a run that never started —
//     handed to Prepare and Start; the command line only registers flags.
//   - [NewProbe], [ProbeCommand]: `avenor probe`, one run of opencode-acp
//     whose permission requests are all rejected.
//   - The tree's shared ledgers: [TreeBudget], the count of executing
//     runtimes every supervisor of a tree reserves in one flocked file
//     (AVENOR_TREE_BUDGET; the supervisor turns a full tree into its typed
//     capacity error), and the spend ledgers a tree-scoped spend limit
//     counts into (AVENOR_SPEND_LEDGER).
//   - [ReadPromptFile], [WorkDir], [ListBackends], [ResolveWorkingDir]: the
//     checks, listings and resolution run, spawn, `avenor backends`, the
//     completion and `avenor mcp` share.
//
// cmd/avenor's commands and host/stable import it; it imports the rooms it
// wires (config, plugins, runner, loop, permission, control, sentinel) and nothing
// of cmd/avenor or host/stable.
package run
