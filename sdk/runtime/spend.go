package runtime

// Capability rows of spend limits and context use (docs/unattended.md):
// what a backend reports at the end of a turn. Absent, the host refuses a
// limit it could not enforce before anything starts.
const (
	// CapUsageReporting: every turn's TurnResult carries Usage (token
	// counts); a token limit needs it.
	CapUsageReporting Capability = "usage_reporting"
	// CapCostReporting: every turn's TurnResult.Extra carries "cost_usd",
	// the turn's cost in US dollars as the runtime priced it; a cost limit
	// needs it or a price for the model in the host's price table.
	CapCostReporting Capability = "cost_reporting"
)

// StopBudgetReached ends a turn at a spend limit (--spend-tokens,
// --spend-usd, --spend-wall); exit code 5 and sentinel BLOCKED, as
// blocked. It appears only in a run that set a limit.
const StopBudgetReached StopReason = "budget_reached"

// TurnResult.Extra keys of context use (docs/unattended.md#context-use): a
// backend that knows how full its context window is after a turn reports
// both, as int64 token counts. The host takes them out of the extras
// (session.end never shows them) and writes avenor.context for a run that
// asked.
const (
	ExtraContextUsedTokens   = "context_used_tokens"
	ExtraContextWindowTokens = "context_window_tokens"
)
