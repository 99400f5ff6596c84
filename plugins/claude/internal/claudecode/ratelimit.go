package claudecode

import (
	"encoding/json"
	"regexp"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// Claude Code's rate limits (docs/unattended.md#rate-limits): its
// stream-json rate_limit_event ({rate_limit_info: {status, resetsAt (Unix
// seconds), rateLimitType, utilization (0–1)}}, read from the API's
// anthropic-ratelimit-unified-* headers) becomes avenor.usage.account, and
// a turn that ends in error on a rate limit (status rejected, or the
// API's 429 in its message) ends with a rate_limited error whose reset is
// the event's.

// rateLimitSupport is how far claude-stream supports
// runtime.CapRateLimitReset: the mapping is tested on recorded frames; the
// pinned CLI against the offline fake LLM does not report the reset of a
// 429 it was refused with (e2e/ratelimit_test.go), so it is not vouched for.
const rateLimitSupport = runtime.Unverified

// rateLimitInfo is a rate_limit_event's rate_limit_info.
type rateLimitInfo struct {
	Status        string   `json:"status"` // allowed, allowed_warning, rejected
	ResetsAt      *float64 `json:"resetsAt"`
	RateLimitType string   `json:"rateLimitType"`
	Utilization   *float64 `json:"utilization"`
}

func (i *rateLimitInfo) reset() time.Time {
	if i == nil || i.ResetsAt == nil || *i.ResetsAt <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(*i.ResetsAt * 1000))
}

// rateLimitEvent emits a rate_limit_event as avenor.usage.account (the
// host writes it only in runs that asked) and keeps it for the turn.
func (s *streamSession) rateLimitEvent(sid string, line []byte) {
	var f struct {
		Info *rateLimitInfo `json:"rate_limit_info"`
	}
	if json.Unmarshal(line, &f) != nil || f.Info == nil {
		return
	}
	window := f.Info.RateLimitType
	if window == "" {
		window = "unified"
	}
	pct := -1.0
	if u := f.Info.Utilization; u != nil && *u >= 0 {
		pct = *u
		if pct <= 1 {
			pct *= 100
		}
	}
	s.emit(runtime.UsageAccount(sid, window, pct, f.Info.reset()))
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t != nil {
		t.limit.Store(f.Info)
	}
}

// rateLimitedRE finds a rate limit in a failed turn's message: the API's
// 429 or its rate_limit_error, as Claude Code words them.
var rateLimitedRE = regexp.MustCompile(`(?i)\b429\b|rate[ _-]?limit`)

// rateLimitError is the rate_limited error of a turn that failed with msg
// on a rate limit, nil when it did not.
func rateLimitError(backend string, t *streamTurn, msg string) error {
	info := t.limit.Load()
	if (info == nil || info.Status != "rejected") && !rateLimitedRE.MatchString(msg) {
		return nil
	}
	return runtime.RateLimited(info.reset(), "%s: claude ended the turn on a rate limit: %s", backend, runtime.Truncate(msg, 500))
}
