// Package stable is the supervisor of `avenor stable` (docs/stable.md,
// docs/control-protocol.md#methods): one long-lived process that runs many
// runtimes at once behind one control socket.
//
// Each runtime is a host/run.Runtime (run.New from a spawn resolved by
// run.ResolveSpawn, run.Recover from its durable record): its event log,
// broker, runs, parking, kept plugin, follow-ups, control views and record
// are its own. The supervisor is their Owner and keeps only what is a
// supervisor's: the runtime table (ids rt_1, rt_2, …) and spawning with
// idempotency keys; admission (--max-runtimes and the tree budget file
// shared with nested supervisors through AVENOR_TREE_BUDGET), one
// executing slot per runtime and per phase of its loop or team; when a
// parked runtime is reaped (--parked-timeout) and which parked runtimes
// keep their plugin (at most MaxKeptPlugins: the longest-parked
// cross_process one stops first, an in_process one only when no other is
// left); the warm pools; the stable-only methods (spawn, list,
// send_to_parent, tree_budget, wait_for_capacity, shutdown) beside the
// control method table; its lifecycle (idle exit, graceful and kill
// shutdown, the <socket>.dead tombstone); and its durable state, behind a
// small store: one state.json per control socket under the user's state
// directory, holding every runtime's record, written atomically as
// runtimes change and removed by a clean shutdown. A supervisor started on
// the socket of one that died recovers its runtimes from it; a state file
// it cannot trust is refused.
//
// Serve assembles a whole `avenor stable` (fleet node, state directory,
// linger window, HTTP debug adapter) from one ServeConfig; cmd/avenor
// parses the flags and hands off.
package stable
