package sentinel

import (
	"fmt"
	"testing"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		stopReason sdk.StopReason
		want       int
	}{
		{"", 0},
		{"end_turn", 0},
		{"refusal", 2},
		{"max_tokens", 3},
		{"max_turn_requests", 4},
		{"blocked", 5},
		{"timeout", 124},
		{"progress_timeout", 124},
		{"cancelled", 130},
		{"cancelled_forced", 130},
		{"error", 1},
		{"session_id_conflict", 1},
		{"degenerate_reasoning_stream", 1},
		{"stop_sequence", 1},
		{"tool_use", 1},
		{"END_TURN", 1},
		{"something new", 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.stopReason), func(t *testing.T) {
			if got := ExitCode(tt.stopReason); got != tt.want {
				t.Fatalf("ExitCode(%q) = %d, want %d", tt.stopReason, got, tt.want)
			}
		})
	}
}

func TestDefaultStopReason(t *testing.T) {
	tests := []struct {
		exit int
		want sdk.StopReason
	}{
		{0, "end_turn"},
		{1, ""},
		{2, "refusal"},
		{3, "max_tokens"},
		{4, "max_turn_requests"},
		{5, "blocked"},
		{6, ""},
		{124, "timeout"},
		{130, "cancelled"},
		{137, ""},
		{-1, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.exit), func(t *testing.T) {
			if got := DefaultStopReason(tt.exit); got != tt.want {
				t.Fatalf("DefaultStopReason(%d) = %q, want %q", tt.exit, got, tt.want)
			}
		})
	}
}

// The two maps must round-trip for every named reason: a run that ends with
// reason R exits ExitCode(R), and reporting that exit code without a reason
// gives back R (or the canonical member of R's class).
func TestExitCodeRoundTrip(t *testing.T) {
	canonical := map[sdk.StopReason]sdk.StopReason{
		"progress_timeout": "timeout",
		"cancelled_forced": "cancelled",
	}
	for _, r := range []sdk.StopReason{"end_turn", "refusal", "max_tokens", "max_turn_requests", "blocked", "timeout", "progress_timeout", "cancelled", "cancelled_forced"} {
		want := r
		if c, ok := canonical[r]; ok {
			want = c
		}
		if got := DefaultStopReason(ExitCode(r)); got != want {
			t.Errorf("DefaultStopReason(ExitCode(%q)) = %q, want %q", r, got, want)
		}
	}
}

func TestRetryable(t *testing.T) {
	tests := []struct {
		name       string
		exit       int
		stopReason sdk.StopReason
		want       bool
	}{
		{"generic failure", 1, "error", true},
		{"failure without reason", 1, "", true},
		{"session id conflict is fatal", 1, "session_id_conflict", false},
		{"clean end", 0, "end_turn", false},
		{"refusal", 2, "refusal", false},
		{"timeout", 124, "timeout", false},
		{"cancelled", 130, "cancelled", false},
		{"blocked", 5, "blocked", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Retryable(tt.exit, tt.stopReason); got != tt.want {
				t.Fatalf("Retryable(%d, %q) = %v, want %v", tt.exit, tt.stopReason, got, tt.want)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	tests := []struct {
		exit int
		want string
	}{
		{0, "DONE"}, {124, "TIMEOUT"}, {130, "KILLED"}, {5, "BLOCKED"},
		{1, "FAILED"}, {2, "FAILED"}, {3, "FAILED"}, {4, "FAILED"}, {137, "FAILED"}, {-1, "FAILED"},
	}
	for _, tt := range tests {
		if got := Status(tt.exit); got != tt.want {
			t.Errorf("Status(%d) = %q, want %q", tt.exit, got, tt.want)
		}
	}
}
