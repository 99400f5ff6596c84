package claudecode

import (
	"errors"
	"testing"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/turn"
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

type recordingHost struct {
	runtime.Host
	events []runtime.Event
}

func (h *recordingHost) Emit(ev runtime.Event) { h.events = append(h.events, ev) }

// TestRateLimitEvent: a recorded rate_limit_event becomes
// avenor.usage.account (utilization 0–1 as a percentage) and is kept for
// the turn, so a rejected window's reset is the turn's.
func TestRateLimitEvent(t *testing.T) {
	h := &recordingHost{}
	s := &streamSession{host: h, gate: turn.NewGate(h, 16, "test")}
	s.gate.Open()
	st := &streamTurn{}
	s.turn = st
	line := []byte(`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1700000000,"rateLimitType":"five_hour","utilization":0.97},"uuid":"u1","session_id":"s1"}`)
	s.rateLimitEvent("s1", line)
	if len(h.events) != 1 || h.events[0].Type != runtime.EventUsageAccount {
		t.Fatalf("events %v, want one avenor.usage.account", h.events)
	}
	f := h.events[0].Fields
	if f["window"] != "five_hour" || f["used_pct"] != 97.0 || f["resets_at"] != "2023-11-14T22:13:20Z" {
		t.Errorf("usage.account %v, want window five_hour, used_pct 97, resets_at 2023-11-14T22:13:20Z", f)
	}
	if err := rateLimitError("claude-stream", st, "API Error"); runtime.ResetOf(err).Unix() != 1700000000 {
		t.Errorf("the turn's error %v does not carry the rejected window's reset", err)
	}
}
