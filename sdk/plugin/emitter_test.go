package plugin

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// recordingHost records emitted event types; Emit can be held.
type recordingHost struct {
	mu   sync.Mutex
	got  []runtime.EventType
	hold chan struct{} // non-nil: each Emit waits for a receive
}

func (h *recordingHost) Emit(ev runtime.Event) {
	if h.hold != nil {
		<-h.hold
	}
	h.mu.Lock()
	h.got = append(h.got, ev.Type)
	h.mu.Unlock()
}

func (h *recordingHost) AskPermission(ctx context.Context, req runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	return runtime.PermissionDecision{}, nil
}

func (h *recordingHost) Logger() hclog.Logger { return hclog.NewNullLogger() }

func (h *recordingHost) types() []runtime.EventType {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]runtime.EventType(nil), h.got...)
}

func evs(types ...runtime.EventType) []runtime.Event {
	out := make([]runtime.Event, len(types))
	for i, t := range types {
		out[i] = runtime.NewEvent(t, nil)
	}
	return out
}

// Batches are emitted in order; drain returns only once everything queued
// before it was emitted; stop emits the rest and ends the goroutine
// (goleak in TestMain).
func TestEmitterOrderAndDrain(t *testing.T) {
	h := &recordingHost{hold: make(chan struct{})}
	em := newEmitter(h)
	em.emit(evs("a", "b"))
	em.emit(nil) // nothing to emit: not queued
	em.emit(evs("c"))

	drained := make(chan struct{})
	go func() {
		em.drain()
		close(drained)
	}()
	for range 2 { // release a and b only
		h.hold <- struct{}{}
	}
	select {
	case <-drained:
		t.Fatal("drain returned before every queued event was emitted")
	case <-time.After(20 * time.Millisecond):
	}
	h.hold <- struct{}{} // c
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		t.Fatal("drain did not return after the queue was emitted")
	}
	if got := h.types(); len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Fatalf("emitted %v, want [a b c]", got)
	}

	em.emit(evs("d", "e"))
	go func() {
		for range 2 {
			h.hold <- struct{}{}
		}
	}()
	em.stop()
	if got := h.types(); len(got) != 5 || got[3] != "d" || got[4] != "e" {
		t.Fatalf("after stop emitted %v, want d and e last", got)
	}
}
