package acp

import (
	"encoding/json"
	"strings"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// PromptResult is the answer to session/prompt: the end of the turn.
type PromptResult struct {
	StopReason string          `json:"stopReason"`
	Usage      *PromptUsage    `json:"usage"`
	Meta       json.RawMessage `json:"_meta"`
}

// PromptUsage is ACP's (unstable) end-of-turn token count, in camelCase.
type PromptUsage struct {
	TotalTokens       int64 `json:"totalTokens"`
	InputTokens       int64 `json:"inputTokens"`
	OutputTokens      int64 `json:"outputTokens"`
	ThoughtTokens     int64 `json:"thoughtTokens"`
	CachedReadTokens  int64 `json:"cachedReadTokens"`
	CachedWriteTokens int64 `json:"cachedWriteTokens"`
}

// geminiMeta is where Gemini CLI puts its token counts instead:
// _meta.quota.token_count.
type geminiMeta struct {
	Quota *struct {
		TokenCount *struct {
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
			TotalTokens  int64 `json:"total_tokens"`
		} `json:"token_count"`
	} `json:"quota"`
}

// stopReasons are ACP v1's stop reasons, which are also the contract's.
var stopReasons = map[string]runtime.StopReason{
	"end_turn":          runtime.StopEndTurn,
	"max_tokens":        runtime.StopMaxTokens,
	"max_turn_requests": runtime.StopMaxTurnRequests,
	"refusal":           runtime.StopRefusal,
	"cancelled":         runtime.StopCancelled,
}

// TurnResult converts the answer to the turn's end: the stop reason as ACP
// names it (an unknown one passes through, and the host treats it as an
// error), usage in snake_case. The final output is left to the host, which
// takes the message text since the last tool call.
func (r PromptResult) TurnResult() runtime.TurnResult {
	res := runtime.TurnResult{StopReason: runtime.StopEndTurn}
	if sr := strings.TrimSpace(r.StopReason); sr != "" {
		if known, ok := stopReasons[strings.ToLower(sr)]; ok {
			res.StopReason = known
		} else {
			res.StopReason = runtime.StopReason(sr)
		}
	}
	if u := r.Usage; u != nil {
		res.Usage = &runtime.Usage{
			InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			TotalTokens: u.TotalTokens, CachedReadTokens: u.CachedReadTokens,
		}
		if res.Usage.TotalTokens == 0 {
			res.Usage.TotalTokens = u.InputTokens + u.OutputTokens
		}
		return res
	}
	var meta geminiMeta
	if len(r.Meta) > 0 && json.Unmarshal(r.Meta, &meta) == nil && meta.Quota != nil && meta.Quota.TokenCount != nil {
		tc := meta.Quota.TokenCount
		res.Usage = &runtime.Usage{InputTokens: tc.InputTokens, OutputTokens: tc.OutputTokens, TotalTokens: tc.TotalTokens}
		if res.Usage.TotalTokens == 0 {
			res.Usage.TotalTokens = tc.InputTokens + tc.OutputTokens
		}
	}
	return res
}
