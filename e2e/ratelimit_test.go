//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"os"
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
// provider's headers, through avenor run --report-usage. Both pinned CLIs
// end the turn in error and the plugins map it to rate_limited
// (avenor.error code, session.end error_code, FAILED, exit 1), but
// neither reports when the limit lifts, nor any usage window: no
// rate_limited_until, no avenor.usage.account. So their capability
// rate_limit_reset says unsupported, and --wait-on-rate-limit is refused
// before anything starts.
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
			if res.code != 1 {
				t.Fatalf("exit %d, want 1: %v", res.code, res)
			}
			evs := readEvents(t, run.events)
			var coded []event
			for _, ev := range only(evs, "avenor.error") {
				if ev.str("code") == "rate_limited" {
					coded = append(coded, ev)
				}
			}
			if len(coded) != 1 || coded[0].str("rate_limited_until") != "" {
				t.Errorf("avenor.error with code rate_limited: %v, want one, with no reset (the CLI reports none)", coded)
			}
			ends := only(evs, "session.end")
			if len(ends) != 1 || ends[0].str("stop_reason") != "error" || ends[0].str("error_code") != "rate_limited" {
				t.Errorf("session.end %v, want one: stop_reason error, error_code rate_limited", ends)
			}
			if acc := only(evs, "avenor.usage.account"); len(acc) != 0 {
				t.Errorf("avenor.usage.account %v: the pinned CLI reported a window; its capability can say more", acc)
			}
			if s, _ := os.ReadFile(run.sentinel); !strings.HasPrefix(string(s), "FAILED\n") {
				t.Errorf("sentinel %q, want FAILED", s)
			}

			// Fail closed: the capability says unsupported, the wait is refused.
			refused := w.startAvenor("refused", "--prompt", "say DONE", "--wait-on-rate-limit")
			r := refused.p.wait()
			if r.code != 1 || !strings.Contains(r.stderr, "cannot wait on a rate limit") {
				t.Errorf("--wait-on-rate-limit on %s: %v, want exit 1 saying it cannot wait", rt.backend, r)
			}
			if fileExists(refused.events) && len(only(readEvents(t, refused.events), "session.start")) != 0 {
				t.Errorf("--wait-on-rate-limit on %s started a session", rt.backend)
			}
		})
	}
}
