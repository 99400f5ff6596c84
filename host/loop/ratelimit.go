package loop

// RateLimitKeys are a roster entry's rate-limit settings
// (docs/unattended.md#rate-limits), as the config keys of the same names;
// nil leaves the run's settings as they are. They apply where the entry
// is the run's loadout (--roster-entry, a spawn's roster_entry).
type RateLimitKeys struct {
	WaitOnRateLimit     *bool `json:"wait_on_rate_limit,omitempty"`
	MaxRateLimitResumes *int  `json:"max_rate_limit_resumes,omitempty"`
}

// Keys are the keys k sets, as config keys.
func (k RateLimitKeys) Keys() map[string]any {
	out := map[string]any{}
	if k.WaitOnRateLimit != nil {
		out["wait_on_rate_limit"] = *k.WaitOnRateLimit
	}
	if k.MaxRateLimitResumes != nil {
		out["max_rate_limit_resumes"] = *k.MaxRateLimitResumes
	}
	return out
}

// IsZero reports whether k sets nothing.
func (k RateLimitKeys) IsZero() bool {
	return k.WaitOnRateLimit == nil && k.MaxRateLimitResumes == nil
}
