package control

import (
	"strings"
	"testing"
	"time"
)

// A connection that called observe no longer counts as a connected
// control client for permission requests; an ordinary one still does, and
// an observer's close does not disturb the count.
func TestObserveDoesNotHoldPermissions(t *testing.T) {
	s := startRun(t, newFakeRuntime(), runOptions{}, Config{})
	waitConnected := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for s.Connected() != want {
			if time.Now().After(deadline) {
				t.Fatalf("Connected() = %v; want %v", !want, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	viewer := dialRaw(t, s.Path())
	waitConnected(true)
	if got := viewer.call(`{"jsonrpc":"2.0","id":1,"method":"observe"}`); !strings.Contains(got, `"observing":true`) {
		t.Fatalf("observe: %s", got)
	}
	waitConnected(false)
	select {
	case <-s.Disconnected():
	default:
		t.Fatal("Disconnected() is open with only an observer connected")
	}
	// Twice is once.
	viewer.call(`{"jsonrpc":"2.0","id":2,"method":"observe"}`)
	harness := dialRaw(t, s.Path())
	harness.call(`{"jsonrpc":"2.0","id":1,"method":"identity"}`)
	waitConnected(true)
	if s.Connections() != 2 {
		t.Fatalf("Connections() = %d; want 2 (observers are connections)", s.Connections())
	}
	viewer.nc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for s.Connections() != 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	waitConnected(true)
	harness.nc.Close()
	waitConnected(false)
}
