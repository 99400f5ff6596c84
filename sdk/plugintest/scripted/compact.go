package scripted

import (
	"context"
	"os"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// contextState is a session's context use as it reported it, and what its
// compactions dropped.
type contextState struct {
	used, window, dropped int64
}

// contextUse is a turn's reported context use: in, its usage step's input
// tokens, less what the session's compactions dropped (never below 0),
// remembered for the next compaction.
func (s *session) contextUse(in, window int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	used := max(in-s.ctx.dropped, 0)
	s.ctx.used, s.ctx.window = used, window
	return used
}

// Compact (runtime.Compactor) compacts the session's context: a quarter
// of what its last turn reported stays, and the rest comes off every later
// turn's use. Without a reported window there is nothing to say, and the
// compaction ends with no context use.
func (s *session) Compact(ctx context.Context) (runtime.TurnResult, error) {
	tr, err := s.Runner.Begin(ctx)
	if err != nil {
		return runtime.TurnResult{StopReason: runtime.StopError}, err
	}
	defer s.Runner.End(tr)
	if os.Getenv(CompactEnv) == "fail" {
		return runtime.TurnResult{StopReason: runtime.StopError}, runtime.Errorf(runtime.FaultRuntime, "scripted: compaction failed (%s=fail)", CompactEnv)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	res := runtime.TurnResult{StopReason: runtime.StopEndTurn}
	if s.ctx.window <= 0 {
		return res, nil
	}
	after := s.ctx.used / 4
	s.ctx.dropped += s.ctx.used - after
	s.ctx.used = after
	res.Extra = map[string]any{runtime.ExtraContextUsedTokens: after, runtime.ExtraContextWindowTokens: s.ctx.window}
	return res, nil
}
