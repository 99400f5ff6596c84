package runner

import (
	"fmt"
	"math"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Context use (docs/unattended.md#context-use): after each turn of a run
// that asked (Options.ContextWarnPct), avenor.context says how full the
// runtime's context window is, where the runtime reports it; an
// avenor.warning follows the first turn of the run at or past the
// threshold.

// SourceContext is the avenor.warning source of a context window past the
// threshold.
const SourceContext = "context"

// contextUse takes the turn's context use out of its extras (session.end
// never carries it) and, when the run asked, reports it. It returns the
// use when the run asked for compaction and the turn reached its
// threshold, else nil.
func (r *Runner) contextUse(h *sessionHost, out *turnOutcome) *contextTokens {
	used, okU := tokenCount(out.extra[sdk.ExtraContextUsedTokens])
	window, okW := tokenCount(out.extra[sdk.ExtraContextWindowTokens])
	delete(out.extra, sdk.ExtraContextUsedTokens)
	delete(out.extra, sdk.ExtraContextWindowTokens)
	warn, compact := r.opts.ContextWarnPct, r.opts.AutoCompactPct
	if (warn <= 0 && compact <= 0) || !okU || !okW || window <= 0 {
		return nil
	}
	pct := math.Round(float64(used)*1000/float64(window)) / 10
	h.emit(event.Event{"event": string(event.TypeContext), "used_tokens": used, "window_tokens": window, "used_pct": pct})
	var due *contextTokens
	if compact > 0 && pct >= float64(compact) {
		due = &contextTokens{used: used, window: window}
	}
	r.contextWarning(h, pct, used, window)
	return due
}

// contextTokens is a context use the runtime reported.
type contextTokens struct{ used, window int64 }

// contextWarning writes the warning of --context-warn-pct: the first turn
// at or past it, and again once the window fell below it.
func (r *Runner) contextWarning(h *sessionHost, pct float64, used, window int64) {
	warn := r.opts.ContextWarnPct
	if warn <= 0 {
		return
	}
	if pct < float64(warn) {
		r.contextWarned = false
		return
	}
	if r.contextWarned {
		return
	}
	r.contextWarned = true
	h.emit(event.Event{"event": string(event.TypeWarning), "source": SourceContext, "used_pct": pct,
		"message": fmt.Sprintf("the context window is %.1f%% full (%d of %d tokens), past --context-warn-pct %d", pct, used, window, warn)})
}

// tokenCount reads a token count of a plugin's extras: an int64 in
// process, a float64 once it crossed the wire.
func tokenCount(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, n >= 0
	case int:
		return int64(n), n >= 0
	case float64:
		return int64(n), n >= 0 && !math.IsNaN(n) && n < math.MaxInt64
	}
	return 0, false
}
