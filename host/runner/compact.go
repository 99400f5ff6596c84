package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Auto-compaction (docs/unattended.md#context-use): after a turn whose
// context use reached Options.AutoCompactPct, at the turn's boundary —
// before its session.end, so before any next turn or follow-up, and before
// a kept session parks — the host asks the runtime to compact its session
// natively (a Turn with Compact set, sdk.Compactor) and reports
// avenor.context.compacted.

// CompactTimeout bounds one compaction: a runtime that has not compacted
// by then is told to stop, and the run goes on uncompacted with a warning.
const CompactTimeout = 5 * time.Minute

// compact asks sess to compact after the turn turnID, whose context use
// was before.
func (r *Runner) compact(ctx context.Context, sess sdk.Session, h *sessionHost, turnID string, before contextTokens) {
	cctx, cancel := context.WithTimeout(ctx, CompactTimeout)
	defer cancel()
	res, err := sess.Prompt(cctx, sdk.Turn{ID: turnID + "-compact", Compact: true})
	if cctx.Err() != nil {
		// The compaction still runs in the plugin: stop it, so the next
		// turn does not find it running.
		stop, cancelStop := context.WithTimeout(context.Background(), closeBudget)
		if cerr := sess.Cancel(stop); cerr != nil {
			r.opts.Logger.Warn("cancelling the compaction failed", "error", cerr)
		}
		cancelStop()
		err = fmt.Errorf("it did not finish within %s", CompactTimeout)
	}
	if err == nil && res.StopReason != sdk.StopEndTurn {
		err = fmt.Errorf("it ended %s", res.StopReason)
	}
	if err != nil {
		h.emit(event.Event{"event": string(event.TypeWarning), "source": SourceContext,
			"message": fmt.Sprintf("the runtime could not compact its context (%d of %d tokens used, past --auto-compact-pct %d): %v; the run goes on uncompacted", before.used, before.window, r.opts.AutoCompactPct, err)})
		return
	}
	ev := event.Event{"event": string(event.TypeContextCompacted), "before_tokens": before.used, "window_tokens": before.window}
	if after, ok := tokenCount(res.Extra[sdk.ExtraContextUsedTokens]); ok {
		ev["after_tokens"] = after
	}
	if w, ok := tokenCount(res.Extra[sdk.ExtraContextWindowTokens]); ok && w > 0 {
		ev["window_tokens"] = w
	}
	h.emit(ev)
}
