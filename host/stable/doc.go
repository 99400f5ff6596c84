// Package stable is the supervisor of `avenor stable` (docs/stable.md, docs/control-protocol.md#methods,
// docs/control-protocol.md#spawn, docs/control-protocol.md#subscribe, docs/stable.md#limits): one long-lived process that runs many runtimes at once,
// each its own plugin process, event writer (seq from 1, runtime_id
// stamped), status, permission broker and sentinel, all controlled through
// one control socket.
//
// A runtime is a host/run.Runtime (run.New at spawn, run.Restore at
// recovery): its event log, writer and broker, its runs and phased run,
// their typed facts, parking its log and bounding its kept final output,
// taking over a recovered turn. This package keeps what is a supervisor's:
// the runtime table (ids rt_1, rt_2, …), spawning with idempotency
// keys, admission (the local --max-runtimes limit and the tree budget file
// shared with nested supervisors through AVENOR_TREE_BUDGET), parking a
// finished runtime for follow-up prompts until --parked-timeout, crash
// isolation (a plugin that dies ends only its own runtime's attempt), the
// supervisor's lifecycle (idle exit, graceful and kill shutdown, the
// <socket>.dead tombstone) and the stable methods of the control protocol,
// registered on a host/control Server.
//
// Follow-ups continue a parked runtime's session: in its still-running
// plugin when the runtime kept it, else in a fresh plugin that resumes the
// session by id (cross_process). At most MaxKeptPlugins parked runtimes
// keep a plugin; past it the longest-parked cross_process one stops its
// plugin first, an in_process one (resume scope in_process: its session
// lives only there, and is lost with it) only when no other is left. A
// parked runtime holds no file open: its event log is reopened to append.
//
// A spawn with loop_file or team_file (docs/control-protocol.md#spawn) makes a runtime whose one run
// is the whole loop or team (host/loop, every phase a run of its own in
// the runtime's stream, the loop's one sentinel); its session_id is "",
// cancel and prompt act on the whole loop, and it takes no follow-up once
// ended. roster_file with roster_entry selects a spawn's backend, agent,
// model and default thinking (docs/loop.md#rosters direct mode).
//
// It also owns the supervisor's durable state (state.go, persist.go), behind
// a small store: one state.json per control socket under the user's state directory, written
// atomically as runtimes change, removed by a clean shutdown; and recovery
// (recover.go): a supervisor started on the socket of one that died brings
// its runtimes back under their ids, re-attaches to the plugins that
// lingered (a turn in flight goes on, a pending permission is pending
// again), continues every log from its last seq, and ends with an error the
// runtimes whose plugin is gone. A state file it cannot trust is refused.
//
// Imported by cmd/avenor (avenor stable). The --http-debug adapter serves
// it through HTTPDebug.
package stable
