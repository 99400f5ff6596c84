package loop

import (
	"fmt"
	"time"

	hostrt "github.com/avenor-go/avenor/host/runner"
)

// SpendKeys are a roster entry's spend limits and context settings
// (docs/unattended.md#spend-limits, #context-use), as the config keys of the
// same names; nil or "" leaves the run's settings as they are. Like the
// sandbox and rate-limit keys they apply in direct mode only (--roster-entry,
// a spawn's roster_entry): a loop or team phase of an entry that sets one is
// refused, never run without the limit it asks for.
type SpendKeys struct {
	SpendTokens    *int     `json:"spend_tokens,omitempty"`
	SpendUSD       *float64 `json:"spend_usd,omitempty"`
	SpendWall      string   `json:"spend_wall,omitempty"`
	SpendScope     string   `json:"spend_scope,omitempty"`
	SpendPolicy    string   `json:"spend_policy,omitempty"`
	ContextWarnPct *int     `json:"context_warn_pct,omitempty"`
	AutoCompactPct *int     `json:"auto_compact_pct,omitempty"`
}

// IsZero reports whether k sets nothing.
func (k SpendKeys) IsZero() bool {
	return k.SpendTokens == nil && k.SpendUSD == nil && k.SpendWall == "" && k.SpendScope == "" &&
		k.SpendPolicy == "" && k.ContextWarnPct == nil && k.AutoCompactPct == nil
}

// check refuses a value no run would take, naming the key.
func (k SpendKeys) check() error {
	if n := k.SpendTokens; n != nil && *n < 0 {
		return fmt.Errorf("spend_tokens %d is negative; use 0 (none) or more", *n)
	}
	if x := k.SpendUSD; x != nil && !(*x >= 0) {
		return fmt.Errorf("spend_usd %v is negative; use 0 (none) or more", *x)
	}
	if k.SpendWall != "" {
		if d, err := time.ParseDuration(k.SpendWall); err != nil || d < 0 {
			return fmt.Errorf("spend_wall %q is not a duration of 0 or more (e.g. 30m)", k.SpendWall)
		}
	}
	if _, err := hostrt.ParseSpendScope(k.SpendScope); err != nil {
		return fmt.Errorf("spend_scope: %w", err)
	}
	if _, err := hostrt.ParseSpendPolicy(k.SpendPolicy); err != nil {
		return fmt.Errorf("spend_policy: %w", err)
	}
	if n := k.ContextWarnPct; n != nil && (*n < 0 || *n > 100) {
		return fmt.Errorf("context_warn_pct %d is out of range: 1 to 100 (0: none)", *n)
	}
	if n := k.AutoCompactPct; n != nil && (*n < 1 || *n > 100) {
		return fmt.Errorf("auto_compact_pct %d is out of range: 1 to 100 (omit it to never compact)", *n)
	}
	return nil
}

// Keys are the keys k sets, as config keys.
func (k SpendKeys) Keys() map[string]any {
	out := map[string]any{}
	if k.SpendTokens != nil {
		out["spend_tokens"] = *k.SpendTokens
	}
	if k.SpendUSD != nil {
		out["spend_usd"] = *k.SpendUSD
	}
	if d, err := time.ParseDuration(k.SpendWall); err == nil {
		out["spend_wall"] = d
	}
	if k.SpendScope != "" {
		out["spend_scope"] = k.SpendScope
	}
	if k.SpendPolicy != "" {
		out["spend_policy"] = k.SpendPolicy
	}
	if k.ContextWarnPct != nil {
		out["context_warn_pct"] = *k.ContextWarnPct
	}
	if k.AutoCompactPct != nil {
		out["auto_compact_pct"] = *k.AutoCompactPct
	}
	return out
}
