package claudecode

import (
	"errors"
	"testing"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
)

func TestRateLimitError(t *testing.T) {
	reset := 1700000000.0
	for _, tc := range []struct {
		name    string
		info    *rateLimitInfo
		msg     string
		limited bool
		reset   time.Time
	}{
		{"a rejected window with its reset", &rateLimitInfo{Status: "rejected", ResetsAt: &reset}, "API Error", true, time.Unix(1700000000, 0)},
		{"a 429 in the message, no event", nil, `API Error: 429 {"type":"error","error":{"type":"rate_limit_error"}}`, true, time.Time{}},
		{"rate_limit_error alone", nil, "rate_limit_error: slow down", true, time.Time{}},
		{"an allowed window, another failure", &rateLimitInfo{Status: "allowed", ResetsAt: &reset}, "API Error: 500 overloaded", false, time.Time{}},
		{"no rate limit at all", nil, "Invalid API key", false, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &streamTurn{}
			if tc.info != nil {
				st.limit.Store(tc.info)
			}
			err := rateLimitError("claude-stream", st, tc.msg)
			if got := err != nil; got != tc.limited {
				t.Fatalf("rate limited = %v, want %v (%v)", got, tc.limited, err)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, runtime.ErrRateLimited) || runtime.FaultOf(err) != runtime.FaultRuntime {
				t.Errorf("err = %v, want a runtime-fault rate_limited error", err)
			}
			if got := runtime.ResetOf(err); !got.Equal(tc.reset) {
				t.Errorf("reset = %v, want %v", got, tc.reset)
			}
		})
	}
}
