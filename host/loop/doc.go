// Package loop runs phase loops and team runs (docs/loop.md): `avenor run
// --loop-file` and `--team-file`, and the nested loop_file / team_file
// phases inside them.
//
// It owns the loop and team config files (strict decoding, the contract's
// validation messages, prompt_file and roster_file resolution, nested
// configs), rosters (--roster-file and per-phase roster_entry), the marker
// scanner (docs/loop.md#markers), the prompt templates (docs/loop.md#prompt-templates, with git deltas), the phase
// state machine of a loop and the outcome rules of a team, the lifecycle
// events (docs/loop.md#lifecycle-events, docs/loop.md#teams) and the run's one sentinel (docs/loop.md#outcomes).
//
// The parts that decide — config, markers, templates, Machine, the team
// rules — are pure and table-tested without processes. The runner (RunLoop,
// RunTeam) drives one phase at a time through a PhaseFunc; Runtimes is the
// PhaseFunc over host/runner, where every phase is a run of its own (its
// plugin process, its session, its retries) writing into the loop's one
// shared event stream.
//
// cmd/avenor imports it for `avenor run` and `avenor verify`. The seam for
// the stable supervisor's spawn with loop_file / team_file (docs/control-protocol.md#spawn) is the
// same: LoadLoop / LoadTeam (with the spawn's roster as LoadOptions.Roster),
// a Runtimes whose Base.Writer is the runtime's writer (stamping its
// runtime_id), then RunLoop / RunTeam in the runtime's goroutine with its
// sentinel path. Runtimes implements host/control's Runtime, so cancel,
// prompt and status act on the whole loop; the spawn result's session_id
// is "" because every phase has a session of its own.
package loop
