//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// Rate limits with the real CLIs (docs/unattended.md#rate-limits): the
// fake LLM answers the first model call 429 with the provider's
// rate-limit headers, then DONE; the CLIs' own retries are capped through
// their settings (claude: CLAUDE_CODE_MAX_RETRIES=0; codex: the fake
// provider's request_max_retries and stream_max_retries = 0).

// rateLimitHeaders are what each provider sends with a 429, resetting in
// 2 s.
func rateLimitHeaders(reset time.Time) map[string]string {
	return map[string]string{
		"retry-after": "2",
		// Anthropic.
		"anthropic-ratelimit-requests-limit":         "50",
		"anthropic-ratelimit-requests-remaining":     "0",
		"anthropic-ratelimit-requests-reset":         reset.UTC().Format(time.RFC3339),
		"anthropic-ratelimit-unified-status":         "rejected",
		"anthropic-ratelimit-unified-reset":          fmt.Sprint(reset.Unix()),
		"anthropic-ratelimit-unified-5h-status":      "rejected",
		"anthropic-ratelimit-unified-5h-reset":       fmt.Sprint(reset.Unix()),
		"anthropic-ratelimit-unified-5h-utilization": "1.0",
		// OpenAI, and Codex's own window headers.
		"x-ratelimit-limit-requests":     "50",
		"x-ratelimit-remaining-requests": "0",
		"x-ratelimit-reset-requests":     "2s",
		"x-codex-primary-used-percent":   "100",
		"x-codex-primary-window-minutes": "300",
		"x-codex-primary-reset-at":       fmt.Sprint(reset.Unix()),
	}
}

// limitedOnce answers the first model call 429, the rest DONE.
func limitedOnce() fakellm.Script {
	var n atomic.Int64
	return func(*fakellm.Request) fakellm.Reply {
		if n.Add(1) == 1 {
			r := fakellm.Fail(http.StatusTooManyRequests, "rate limit exceeded: slow down")
			r.Headers = rateLimitHeaders(time.Now().Add(2 * time.Second))
			return r
		}
		return fakellm.Text("DONE")
	}
}

// TestRateLimitRealCLIs: what each real CLI makes of a 429 with the
// provider's headers, through avenor run --report-usage: the mapping to
// rate_limited (and avenor.usage.account where the CLI reports windows),
// or, where the pinned version reports nothing avenor can read, that the
// backend's rate_limit_reset capability is not "supported".
func TestRateLimitRealCLIs(t *testing.T) {
	installClaude(t)
	codex.bin = func() string { return codexBin(t) }
	claude := *claudeStream
	base := claude.setup
	claude.setup = func(w *world) { base(w); w.env = append(w.env, "CLAUDE_CODE_MAX_RETRIES=0") }
	for _, rt := range []*runtimeSpec{&claude, codex} {
		t.Run(rt.backend, func(t *testing.T) {
			w := newWorld(t, rt, fakellm.Config{Script: limitedOnce()})
			run := w.startAvenor("run", "--prompt", "say DONE", "--report-usage")
			res := run.p.wait()
			evs := readEvents(t, run.events)
			var lines []string
			for _, ev := range evs {
				switch ev.name() {
				case "avenor.error", "session.end", "avenor.usage.account", "avenor.warning":
					lines = append(lines, fmt.Sprintf("%v", map[string]any(ev)))
				}
			}
			t.Logf("%s: exit %d; %s", rt.backend, res.code, strings.Join(lines, "\n"))
		})
	}
}
