package fleet

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestTransientSetup: a set-up step is tried again for a cluster that
// cannot answer yet — a request that timed out, JetStream temporarily
// unavailable — and not for a refusal or once the caller gave up.
func TestTransientSetup(t *testing.T) {
	live := context.Background()
	gone, cancel := context.WithCancel(live)
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"request timed out", live, fmt.Errorf("fleet: opening stream X: %w", context.DeadlineExceeded), true},
		{"nats timeout", live, nats.ErrTimeout, true},
		{"no responders", live, nats.ErrNoResponders, true},
		{"no leader yet", live, &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{"not found", live, &jetstream.APIError{Code: 404, ErrorCode: jetstream.JSErrCodeStreamNotFound}, false},
		{"incompatible", live, fmt.Errorf("%w: stream X", ErrIncompatible), false},
		{"other", live, errors.New("permission denied"), false},
		{"caller gave up", gone, context.DeadlineExceeded, false},
	} {
		if got := transientSetup(tc.ctx, tc.err); got != tc.want {
			t.Errorf("%s: transientSetup(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestUntilSetUpRetriesTransient: a step failing for a cluster not ready
// is run again until it succeeds; a refusal is returned at once.
func TestUntilSetUpRetriesTransient(t *testing.T) {
	tries := 0
	v, err := untilSetUp(context.Background(), func() (int, error) {
		tries++
		if tries < 3 {
			return 0, context.DeadlineExceeded
		}
		return 7, nil
	})
	if v != 7 || err != nil || tries != 3 {
		t.Fatalf("untilSetUp = %d, %v after %d tries; want 7, nil after 3", v, err, tries)
	}
	tries = 0
	start := time.Now()
	_, err = untilSetUp(context.Background(), func() (int, error) { tries++; return 0, ErrIncompatible })
	if !errors.Is(err, ErrIncompatible) || tries != 1 || time.Since(start) > time.Second {
		t.Fatalf("a refusal: %v after %d tries; want it at once", err, tries)
	}
}
