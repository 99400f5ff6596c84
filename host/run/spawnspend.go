package run

import (
	"fmt"
	"time"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/loop"

	"github.com/avenor-go/avenor/host/control"
	hostrt "github.com/avenor-go/avenor/host/runner"
)

// validateSpend checks the spend params that need no backend: a negative
// or unparsable limit, an unknown scope or policy are -32602.
func (p *SpawnParams) validateSpend() error {
	wall, err := ParseTimeout(p.SpendWall)
	if err != nil {
		return control.InvalidParams(fmt.Sprintf("spend_wall: %v", err))
	}
	l := hostrt.SpendLimits{Wall: wall}
	if p.SpendTokens != nil {
		l.Tokens = *p.SpendTokens
	}
	if p.SpendUSD != nil {
		l.USD = *p.SpendUSD
	}
	if err := l.Validate(spawnParam); err != nil {
		return control.InvalidParams(err.Error())
	}
	if _, err := hostrt.ParseSpendScope(p.SpendScope); err != nil {
		return control.InvalidParams("spend_scope: " + err.Error())
	}
	if _, err := hostrt.ParseSpendPolicy(p.SpendPolicy); err != nil {
		return control.InvalidParams("spend_policy: " + err.Error())
	}
	if n := p.ContextWarnPct; n != nil && (*n < 0 || *n > 100) {
		return control.InvalidParams(fmt.Sprintf("context_warn_pct %d is out of range: 0 to 100", *n))
	}
	if n := p.AutoCompactPct; n != nil && (*n < 1 || *n > 100) {
		return control.InvalidParams(fmt.Sprintf("auto_compact_pct %d is out of range: 1 to 100 (omit it to never compact)", *n))
	}
	return nil
}

// spendKeys adds the spend params the spawn gave to its config keys.
func (p SpawnParams) spendKeys(out map[string]any) {
	if p.SpendTokens != nil {
		out["spend_tokens"] = int(*p.SpendTokens)
	}
	if p.SpendUSD != nil {
		out["spend_usd"] = *p.SpendUSD
	}
	if d, _ := ParseTimeout(p.SpendWall); d > 0 {
		out["spend_wall"] = d
	}
	if p.SpendScope != "" {
		out["spend_scope"] = p.SpendScope
	}
	if p.SpendPolicy != "" {
		out["spend_policy"] = p.SpendPolicy
	}
	if p.ContextWarnPct != nil {
		out["context_warn_pct"] = *p.ContextWarnPct
	}
	if p.AutoCompactPct != nil {
		out["auto_compact_pct"] = *p.AutoCompactPct
	}
}

// entrySpend gives s, a run's layered settings, its direct-mode roster
// entry's spend and context keys where the command line set none.
func entrySpend(k loop.SpendKeys, s *config.Settings, given func(string) bool) {
	for key, v := range k.Keys() {
		if given(key) {
			continue
		}
		switch key {
		case "spend_tokens":
			s.SpendTokens = v.(int)
		case "spend_usd":
			s.SpendUSD = v.(float64)
		case "spend_wall":
			s.SpendWall = v.(time.Duration)
		case "spend_scope":
			s.SpendScope = v.(string)
		case "spend_policy":
			s.SpendPolicy = v.(string)
		case "context_warn_pct":
			s.ContextWarnPct = v.(int)
		case "auto_compact_pct":
			s.AutoCompactPct = v.(int)
		}
	}
}
