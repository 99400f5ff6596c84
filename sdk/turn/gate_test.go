package turn

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/runtime"
)

type recHost struct {
	mu  sync.Mutex
	evs []runtime.Event
}

func (h *recHost) Emit(ev runtime.Event) { h.mu.Lock(); h.evs = append(h.evs, ev); h.mu.Unlock() }
func (h *recHost) AskPermission(context.Context, runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	return runtime.PermissionDecision{}, nil
}
func (h *recHost) Logger() hclog.Logger { return hclog.NewNullLogger() }

func (h *recHost) deltas() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, ev := range h.evs {
		if ev.Type == runtime.EventWarning {
			out = append(out, "W:"+fmt.Sprint(ev.Fields["message"]))
			continue
		}
		out = append(out, fmt.Sprint(ev.Fields["delta"]))
	}
	return strings.Join(out, " ")
}

func chunk(s string) runtime.Event {
	return runtime.NewEvent(runtime.EventMessageChunk, map[string]any{"delta": s})
}

func TestGate(t *testing.T) {
	tests := []struct {
		name  string
		steps string // e: emit next, o: Open, s: Shut, f: Flush, c: Close
		want  string
	}{
		{"held until a turn opens", "eeo", "1 2"},
		{"live in a turn", "oee", "1 2"},
		{"held after the turn's end", "oesee", "1"},
		{"held ones first at the next turn", "oeseeoe", "1 2 3 4"},
		{"flush sends without opening", "efe", "1"},
		{"closed discards held and later", "eece", ""},
		{"open after close stays closed", "ecoe", ""},
		{"over the bound: counted, then a warning", "eeeeo", "1 2 3 W:test: 1 events sent between turns were dropped (over 3 held)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &recHost{}
			g := NewGate(h, 3, "test")
			n := 0
			for _, step := range tt.steps {
				switch step {
				case 'e':
					n++
					g.Emit(chunk(fmt.Sprint(n)))
				case 'o':
					g.Open()
				case 's':
					g.Shut()
				case 'f':
					g.Flush()
				case 'c':
					g.Close()
				}
			}
			if got := h.deltas(); got != tt.want {
				t.Errorf("steps %q: host got %q, want %q", tt.steps, got, tt.want)
			}
		})
	}
}

// Concurrent emitters never see an event land after Shut returned.
func TestGateShutWaitsForEmitInFlight(t *testing.T) {
	h := &recHost{}
	g := NewGate(h, 1<<20, "test")
	g.Open()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 500 {
				g.Emit(chunk(fmt.Sprint(i, j)))
			}
		}()
	}
	g.Shut()
	h.mu.Lock()
	atShut := len(h.evs)
	h.mu.Unlock()
	wg.Wait()
	h.mu.Lock()
	after := len(h.evs)
	h.mu.Unlock()
	if after != atShut {
		t.Errorf("%d events reached the host after Shut returned", after-atShut)
	}
	g.Open()
	if got := len(h.evs); got != 2000 {
		t.Errorf("after reopening the host has %d events, want all 2000", got)
	}
}
