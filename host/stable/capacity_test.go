package stable

import (
	"context"
	"errors"
	"testing"
	"time"

	hostrun "github.com/avenor-go/avenor/host/run"
)

// capacitySupervisor is a supervisor that is not serving, its tree budget
// degraded (only --max-runtimes applies), with every slot taken.
func capacitySupervisor(t *testing.T, max int) *Supervisor {
	t.Helper()
	s, err := New(Config{SocketPath: "unused.sock", MaxRuntimes: max, Resolve: func(string, map[string]any) (Backend, error) {
		return Backend{}, errors.New("unused")
	}})
	if err != nil {
		t.Fatal(err)
	}
	s.tree = hostrun.OpenTreeBudget("", "", "test", max, time.Now) // degraded: no home
	s.active = max
	return s
}

// TestWaitForCapacityWakesOnRelease: a wait blocked by --max-runtimes wakes
// when a slot is given back, at once — not at a poll interval.
func TestWaitForCapacityWakesOnRelease(t *testing.T) {
	s := capacitySupervisor(t, 2)
	type res struct {
		m   map[string]any
		err error
		at  time.Time
	}
	done := make(chan res, 1)
	go func() {
		m, err := s.WaitForCapacity(context.Background(), time.Minute)
		done <- res{m, err, time.Now()}
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case r := <-done:
		t.Fatalf("answered while full: %v %v", r.m, r.err)
	default:
	}
	freedAt := time.Now()
	s.mu.Lock()
	s.active--
	s.slotFreedLocked()
	s.mu.Unlock()
	r := <-done
	if r.err != nil || r.m["available"] != true || r.m["timed_out"] != false || r.m["active"] != 1 || r.m["capacity"] != 2 {
		t.Fatalf("after a release: %v %v", r.m, r.err)
	}
	if d := r.at.Sub(freedAt); d > PhaseSlotRetry/2 {
		t.Fatalf("woke %v after the release; want at once", d)
	}
}

// TestWaitForCapacityTimesOutAndStops: a full supervisor answers
// timed_out with the limit that is full; a stopping one refuses.
func TestWaitForCapacityTimesOutAndStops(t *testing.T) {
	s := capacitySupervisor(t, 1)
	from := time.Now()
	m, err := s.WaitForCapacity(context.Background(), 50*time.Millisecond)
	if d := time.Since(from); err != nil || m["available"] != false || m["timed_out"] != true || m["source"] != SourceLocal || d < 50*time.Millisecond {
		t.Fatalf("timed out wait: %v %v after %v", m, err, d)
	}
	if m, err := s.WaitForCapacity(context.Background(), 0); err != nil || m["timed_out"] != true {
		t.Fatalf("wait 0 while full: %v %v", m, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.WaitForCapacity(context.Background(), time.Minute)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	s.requestStop(ReasonShutdown, ModeGraceful)
	select {
	case err := <-done:
		if !errors.Is(err, ErrShuttingDown) {
			t.Fatalf("wait during a stop: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a stop did not end the wait")
	}
}

func TestBurstEnded(t *testing.T) {
	for _, tc := range []struct {
		peak, active int
		want         bool
	}{
		{200, 100, true},
		{200, 101, false},
		{200, 0, true},
		{BurstRuntimes, BurstRuntimes / 2, true},
		{BurstRuntimes, BurstRuntimes/2 + 1, false},
		{BurstRuntimes - 1, 0, false},
		{0, 0, false},
	} {
		if got := burstEnded(tc.peak, tc.active); got != tc.want {
			t.Errorf("burstEnded(%d, %d) = %v, want %v", tc.peak, tc.active, got, tc.want)
		}
	}
}
