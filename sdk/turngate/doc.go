// Package turngate keeps a session's events inside its turns. An agent
// runtime speaks when it likes — while a session opens, after a turn's
// answer, between prompts — but the host's stream promises that no event
// of a session lands before its session.start or after the session.end of
// its turn. A Gate passes events through while a turn is open and holds
// them (bounded, and counted when the bound is hit) until the next turn
// opens, so nothing is reordered and nothing is dropped without a warning.
//
// Plugins whose runtime streams on its own (ACP agents, codex, claude
// stream-json) use one Gate per session; the host does not import it.
package turngate
