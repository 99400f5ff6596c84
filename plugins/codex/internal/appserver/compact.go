package appserver

import (
	"context"
	"encoding/json"

	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/turn"
)

// Compaction (runtime.Compactor, docs/unattended.md#context-use):
// thread/compact/start answers {} at once and runs the compaction as a
// turn of the thread — turn/started, a contextCompaction item,
// thread/tokenUsage/updated, turn/completed — which the mapping follows
// as it does a prompt's turn (codex 0.171: the model is asked for a
// handoff summary). The host bounds the wait (CompactTimeout);
// a cancel interrupts the turn once turn/started named it.

type compactParams struct {
	ThreadID string `json:"threadId"`
}

var _ runtime.Compactor = (*Session)(nil)

// Compact compacts the thread's context and returns when its turn ends. A
// compaction has no answer (no final output), and says no context use
// after it (see below).
func (s *Session) Compact(ctx context.Context) (runtime.TurnResult, error) {
	rt, err := s.Runner.Begin(ctx)
	if err != nil {
		return runtime.TurnResult{StopReason: runtime.StopError}, err
	}
	defer s.Runner.End(rt)
	t := &turnState{rt: rt, done: make(chan struct{}), wantInterrupt: rt.IsCancelled()}
	defer turn.Publish(&s.mu, &s.turn, t)()
	if rt.IsCancelled() {
		return runtime.TurnResult{StopReason: runtime.StopCancelled, Extra: s.extra()}, nil
	}
	res, err := s.await(rt, t, "thread/compact/start", s.conn.Go("thread/compact/start", compactParams{ThreadID: s.id}))
	res.FinalOutput, res.HasFinalOutput = "", false
	// The token usage Codex reports in the compaction's turn is the
	// summarising model call's (the whole history in), not what the
	// context holds after it: the next turn's use says that.
	delete(res.Extra, runtime.ExtraContextUsedTokens)
	delete(res.Extra, runtime.ExtraContextWindowTokens)
	return res, err
}

// turnStarted records the id of a turn Codex started on its own (a
// compaction's): turn/start's answer names a prompt's, thread/compact/start's
// none.
func (s *Session) turnStarted(params json.RawMessage) {
	var p struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if json.Unmarshal(params, &p) != nil || p.Turn.ID == "" {
		return
	}
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t != nil {
		s.setTurnID(t, p.Turn.ID)
	}
}
