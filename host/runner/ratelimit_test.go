package runner

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRateLimitWaitThenResume: with RateLimit.Wait the turn waits for the
// reset (the status saying so, OnWait told), the same prompt goes again on
// the same session, and the turn ends well with one session.end.
func TestRateLimitWaitThenResume(t *testing.T) {
	f := newFixture(t, "ratelimit 300ms\nsay done")
	var mu sync.Mutex
	var waits []int
	seen := make(chan Status, 1)
	var r *Runner
	f.opts.RateLimit = RateLimit{Wait: true, MaxResumes: 2, Jitter: func() time.Duration { return 0 },
		OnWait: func(until time.Time, n int, prompt string) {
			mu.Lock()
			defer mu.Unlock()
			if !until.IsZero() {
				waits = append(waits, n)
				if prompt != f.opts.Prompt {
					t.Errorf("OnWait prompt %q, want the turn's", prompt)
				}
				go func() { time.Sleep(50 * time.Millisecond); seen <- r.Status() }()
			}
		}}
	r = New(f.opts, nil)
	res := r.Run(context.Background())
	if res.ExitCode != 0 || res.StopReason != "end_turn" {
		t.Fatalf("result %+v", res)
	}
	if st := <-seen; st.WaitingReason != WaitingRateLimit || st.RateLimitedUntil == "" {
		t.Errorf("status while waiting: %+v, want waiting_reason rate_limit and rate_limited_until", st)
	}
	if st := r.Status(); st.WaitingReason != "" {
		t.Errorf("status after the run still waits: %+v", st)
	}
	if !slices.Equal(waits, []int{1}) {
		t.Errorf("waits %v, want [1]", waits)
	}
	types := f.types(t)
	if n := strings.Count(strings.Join(types, ","), "session.end"); n != 1 || !slices.Contains(types, "avenor.rate_limit.wait") || slices.Contains(types, "avenor.error") {
		t.Errorf("events %v: want one rate_limit.wait, no avenor.error, one session.end", types)
	}
}

// TestRateLimitCancelWhileWaiting: a cancel during the wait ends the turn
// cancelled (130), as it would a running one, without a resume.
func TestRateLimitCancelWhileWaiting(t *testing.T) {
	f := newFixture(t, "ratelimit 30s\nsay done")
	f.opts.RateLimit = RateLimit{Wait: true, MaxResumes: 5}
	ctx, cancel := context.WithCancelCause(context.Background())
	f.opts.RateLimit.OnWait = func(until time.Time, _ int, _ string) {
		if !until.IsZero() {
			time.AfterFunc(100*time.Millisecond, func() { cancel(ErrInterrupted) })
		}
	}
	res := New(f.opts, nil).Run(ctx)
	if res.ExitCode != 130 || res.StopReason != "cancelled" {
		t.Fatalf("result %+v, want cancelled 130", res)
	}
	if s := sentinelText(t, f); !strings.HasPrefix(s, "KILLED\n") {
		t.Errorf("sentinel %q", s)
	}
}

// TestUsageAccountDroppedUnlessAsked: avenor.usage.account reaches the
// stream only with ReportUsage.
func TestUsageAccountDroppedUnlessAsked(t *testing.T) {
	for _, report := range []bool{false, true} {
		f := newFixture(t, "account 5h 10 1h\nsay done")
		f.opts.ReportUsage = report
		New(f.opts, nil).Run(context.Background())
		if got := slices.Contains(f.types(t), "avenor.usage.account"); got != report {
			t.Errorf("ReportUsage %v: usage.account written %v", report, got)
		}
	}
}
