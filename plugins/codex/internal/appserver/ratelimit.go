package appserver

import (
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// Codex's rate limits (docs/unattended.md#rate-limits): the
// account/rateLimits/updated notification ({rateLimits: {primary,
// secondary: {usedPercent, resetsAt (Unix seconds), windowDurationMins}}})
// becomes avenor.usage.account per window, and a turn that fails with
// codexErrorInfo rateLimitExceeded or usageLimitExceeded (or the API's 429
// in its message) ends with a rate_limited error whose reset is that of
// the fullest window the account last reported.

// rateLimitSupport is how far codex-app-server supports
// runtime.CapRateLimitReset: the mapping is tested on recorded frames; the
// pinned CLI against the offline fake LLM retries a 429 itself and reports
// no window (e2e/ratelimit_test.go), so it is not vouched for.
const rateLimitSupport = runtime.Unverified

// rateLimitWindow is one window of a RateLimitSnapshot.
type rateLimitWindow struct {
	UsedPercent        float64 `json:"usedPercent"`
	ResetsAt           *int64  `json:"resetsAt"`
	WindowDurationMins *int64  `json:"windowDurationMins"`
}

func (w *rateLimitWindow) reset() time.Time {
	if w == nil || w.ResetsAt == nil || *w.ResetsAt <= 0 {
		return time.Time{}
	}
	return time.Unix(*w.ResetsAt, 0)
}

// name is the window's length as a name ("5h", "7d"), else fallback.
func (w *rateLimitWindow) name(fallback string) string {
	if w.WindowDurationMins == nil || *w.WindowDurationMins <= 0 {
		return fallback
	}
	m := *w.WindowDurationMins
	switch {
	case m%1440 == 0:
		return fmt.Sprintf("%dd", m/1440)
	case m%60 == 0:
		return fmt.Sprintf("%dh", m/60)
	}
	return fmt.Sprintf("%dm", m)
}

// rateLimitsUpdated emits each reported window as avenor.usage.account
// (the host writes it only in runs that asked) and keeps the fullest
// window's reset for a rate-limited turn.
func (s *Session) rateLimitsUpdated(params json.RawMessage) {
	var p struct {
		RateLimits struct {
			Primary   *rateLimitWindow `json:"primary"`
			Secondary *rateLimitWindow `json:"secondary"`
		} `json:"rateLimits"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		s.passNative("account/rateLimits/updated", params)
		return
	}
	var fullest *rateLimitWindow
	for _, w := range []struct {
		name string
		w    *rateLimitWindow
	}{{"primary", p.RateLimits.Primary}, {"secondary", p.RateLimits.Secondary}} {
		if w.w == nil {
			continue
		}
		s.emit(runtime.UsageAccount(s.id, w.w.name(w.name), w.w.UsedPercent, w.w.reset()))
		if fullest == nil || w.w.UsedPercent > fullest.UsedPercent {
			fullest = w.w
		}
	}
	if fullest != nil {
		s.mu.Lock()
		s.limitReset = fullest.reset()
		s.mu.Unlock()
	}
}

// rateLimitedRE finds a rate limit in a failed turn's message.
var rateLimitedRE = regexp.MustCompile(`(?i)\b429\b|rate[ _-]?limit|usage limit`)

// rateLimitError is the rate_limited error of a failed turn whose
// codexErrorInfo is info and message msg, nil when it was no rate limit.
func (s *Session) rateLimitError(info, msg string) error {
	if info != "rateLimitExceeded" && info != "usageLimitExceeded" && !rateLimitedRE.MatchString(msg) {
		return nil
	}
	s.mu.Lock()
	reset := s.limitReset
	s.mu.Unlock()
	if !reset.After(time.Now()) {
		reset = time.Time{}
	}
	return runtime.RateLimited(reset, "%s: codex ended the turn on a rate limit: %s", Name, runtime.Truncate(msg, 500))
}
