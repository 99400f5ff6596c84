package appserver

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/turn"
)

type recordingHost struct {
	runtime.Host
	events []runtime.Event
}

func (h *recordingHost) Emit(ev runtime.Event) { h.events = append(h.events, ev) }

func TestRateLimitsUpdated(t *testing.T) {
	reset := time.Now().Add(time.Hour).Unix()
	h := &recordingHost{}
	s := &Session{host: h, id: "th_1"}
	s.gate = turn.NewGate(h, 16, "test")
	s.gate.Open()
	params, _ := json.Marshal(map[string]any{"rateLimits": map[string]any{
		"primary":   map[string]any{"usedPercent": 97, "resetsAt": reset, "windowDurationMins": 300},
		"secondary": map[string]any{"usedPercent": 12, "windowDurationMins": 10080},
	}})
	s.rateLimitsUpdated(params)
	var got []string
	for _, ev := range h.events {
		if ev.Type == runtime.EventUsageAccount {
			got = append(got, ev.Fields["window"].(string))
		}
	}
	if len(got) != 2 || got[0] != "5h" || got[1] != "7d" {
		t.Fatalf("usage.account windows %v, want [5h 7d]", got)
	}
	err := s.rateLimitError("rateLimitExceeded", "stream error: exceeded retry limit, last status: 429 Too Many Requests")
	if !errors.Is(err, runtime.ErrRateLimited) || runtime.ResetOf(err).Unix() != reset {
		t.Errorf("rate-limited turn: %v (reset %v), want rate_limited with the fullest window's reset", err, runtime.ResetOf(err))
	}
	if err := s.rateLimitError("unauthorized", "401 Unauthorized"); err != nil {
		t.Errorf("an auth failure is no rate limit: %v", err)
	}
}
