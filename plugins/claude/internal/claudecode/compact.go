package claudecode

import (
	"context"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// Compaction (runtime.Compactor, docs/unattended.md#context-use): Claude
// Code compacts its conversation when a stream-json user message is the
// slash command /compact — a turn of its own, whose model call writes the
// summary and whose result frame ends it.

var _ runtime.Compactor = (*streamSession)(nil)

// compactCommand is the user message that asks Claude Code to compact.
const compactCommand = "/compact"

// Compact compacts the session's conversation and returns when Claude
// Code's result frame ends the compaction's turn. It has no answer (no
// final output) and says no context use after it (see below).
func (s *streamSession) Compact(ctx context.Context) (runtime.TurnResult, error) {
	res, err := s.Prompt(ctx, runtime.Turn{Text: compactCommand})
	res.FinalOutput, res.HasFinalOutput = "", false
	// The last model call's usage is the summarising call's (the whole
	// conversation in), not what the context holds after it: the next
	// turn's use says that.
	delete(res.Extra, runtime.ExtraContextUsedTokens)
	delete(res.Extra, runtime.ExtraContextWindowTokens)
	return res, err
}
