package runtime

import "context"

// CapCompaction: the backend can compact its session's context natively
// (Compactor) when the host asks at a turn boundary (--auto-compact-pct,
// docs/unattended.md#context-use). Absent, the host refuses
// --auto-compact-pct before anything starts.
const CapCompaction Capability = "compaction"

// Compactor is an optional Session extension: a session that can compact
// its context natively. sdk/plugin calls Compact for a host's Turn with
// Compact set, in place of Prompt, as a turn of its own: one at a time
// with prompts, cancelled as a prompt is. A session without it ends such a
// turn with an unsupported error.
type Compactor interface {
	// Compact compacts the session's context and returns when it is done
	// (or ctx is). The result's StopReason is StopEndTurn on success; its
	// Extra carries ExtraContextUsedTokens and ExtraContextWindowTokens
	// after the compaction where the runtime says them. It emits no
	// message chunks: a compaction has no answer.
	Compact(ctx context.Context) (TurnResult, error)
}

// Compact runs a compaction turn on sess, a session of the backend info
// describes: through Compactor when the backend declares CapCompaction,
// else an unsupported error naming what to do.
func Compact(ctx context.Context, sess Session, info BackendInfo) (TurnResult, error) {
	if c, ok := sess.(Compactor); ok && info.Capability(CapCompaction) != Unsupported {
		return c.Compact(ctx)
	}
	return TurnResult{StopReason: StopError}, Errorf(FaultUser, "backend %s cannot compact its context (capability %s); drop --auto-compact-pct", info.Name, CapCompaction).WithCode(CodeUnsupported)
}
