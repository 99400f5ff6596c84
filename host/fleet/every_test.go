package fleet

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestEvery: fn runs on each tick, never before the first one, and every
// returns once ctx ends.
func TestEvery(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var runs atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		every(ctx, 10*time.Millisecond, func() {
			if runs.Add(1) == 3 {
				cancel()
			}
		})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("every ran fn %d times in 10 s and did not return", runs.Load())
	}
	if n := runs.Load(); n != 3 {
		t.Errorf("fn ran %d times, want 3 (the third cancelled ctx)", n)
	}

	start := time.Now()
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	every(ctx, time.Hour, func() { t.Error("fn ran before its first tick") })
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("every returned %s after its ctx ended", took)
	}
}
