// Package turn is the session lifecycle a backend plugin embeds instead of
// writing its own: a Runner owns the turn in flight (one at a time), a
// once-only cancel that is remembered when it arrives while a turn is
// starting, the grace a cancelled turn gets before its runtime is killed,
// "the runtime is gone" and the order of Close. A backend supplies only how
// to interrupt its runtime and what to do when a cancelled turn overstays.
//
// Its Gate keeps a session's events inside its turns: an agent runtime
// speaks when it likes — while a session opens, after a turn's answer,
// between prompts — but the host's stream promises that no event of a
// session lands before its session.start or after the session.end of its
// turn. A Gate passes events through while a turn is open and holds them
// (bounded, and counted when the bound is hit) until the next turn opens,
// so nothing is reordered and nothing is dropped without a warning. A
// Runner given a Gate opens it when a turn begins and shuts it when the
// turn ends.
//
// Plugins import it; the host does not.
package turn
