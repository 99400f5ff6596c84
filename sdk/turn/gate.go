package turn

import (
	"fmt"
	"sync"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// Gate orders a session's events around its turns. Its zero value is not
// usable; see NewGate. All methods are safe for concurrent use, and events
// reach the host in the order Emit was called.
type Gate struct {
	host runtime.Host
	max  int    // events held between turns, at most
	who  string // names the sender in the dropped-events warning

	mu      sync.Mutex // held across host.Emit: it is what keeps the order
	open    bool
	closed  bool
	held    []runtime.Event
	dropped int
}

// NewGate returns a closed-turn gate to host. max bounds the events held
// between turns (beyond it they are counted, and the next turn starts with
// an avenor.warning saying how many were dropped); who names the sender in
// that warning, e.g. "codex-app-server: codex".
func NewGate(host runtime.Host, max int, who string) *Gate {
	return &Gate{host: host, max: max, who: who}
}

// Emit sends ev to the host while a turn is open, holds it for the next
// turn otherwise, and discards it once the gate is closed.
func (g *Gate) Emit(ev runtime.Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.closed:
	case g.open:
		g.host.Emit(ev)
	case len(g.held) < g.max:
		g.held = append(g.held, ev)
	default:
		g.dropped++
	}
}

// Open starts a turn: the held events go first, then a warning if any
// were dropped, then every later Emit until Shut.
func (g *Gate) Open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.flushLocked()
	g.open = !g.closed
}

// Flush sends the held events now without opening a turn (for a request
// that must not overtake what the runtime said before it).
func (g *Gate) Flush() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.flushLocked()
}

// Shut ends the turn: it returns after any Emit in flight, and later
// events are held for the next turn, so none lands after the turn's end.
func (g *Gate) Shut() {
	g.mu.Lock()
	g.open = false
	g.mu.Unlock()
}

// Close discards what is held and every later event.
func (g *Gate) Close() {
	g.mu.Lock()
	g.closed, g.open, g.held = true, false, nil
	g.mu.Unlock()
}

func (g *Gate) flushLocked() {
	if g.closed {
		return
	}
	for _, ev := range g.held {
		g.host.Emit(ev)
	}
	if g.dropped > 0 {
		g.host.Emit(runtime.NewEvent(runtime.EventWarning, map[string]any{"source": "backend",
			"message": fmt.Sprintf("%s: %d events sent between turns were dropped (over %d held)", g.who, g.dropped, g.max)}))
	}
	g.held, g.dropped = nil, 0
}
