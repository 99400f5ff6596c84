package plugin

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/avenor-go/avenor/sdk/plugin/internal/toproto"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Lingering: a plugin of `avenor stable` that loses its host —
// the supervisor was killed, crashed, ran out of memory — keeps its
// sessions and their runtimes for a bounded window instead of stopping them
// at once, buffering what it would have sent, so that a supervisor
// restarted on the same socket can take them over. When the window passes
// with no host back, it stops every runtime and exits as a plugin always
// did: no orphans. A host that stops the plugin itself (a shutdown, a
// kill, SIGHUP) is obeyed at once, lingering or not.
const (
	// LingerEnv carries the linger window from the host to the plugin, as
	// a Go duration. Only `avenor stable` sets it; absent or 0, a plugin
	// whose host dies stops its runtimes at once (`avenor run`). The
	// plugin removes it from its own environment at start, so that
	// nothing it runs (a runtime, an avenor inside it) inherits it.
	LingerEnv = "AVENOR_PLUGIN_LINGER"
	// DefaultLinger is `avenor stable --linger`'s default.
	DefaultLinger = 60 * time.Second
	// MaxLingerBuffer bounds, per session, the bytes of messages a
	// lingering plugin keeps for the host; past it the oldest events go
	// and the host is told how many with an avenor.warning.
	MaxLingerBuffer = 8 << 20
	// MaxReplayEvents and maxReplayBytes bound the events last sent that a
	// lingering session sends a new host again (Opened.replay_events): the
	// old host may have died before writing them. They cover what can be
	// in flight between a plugin and a host's log.
	MaxReplayEvents = 1024
	maxReplayBytes  = 1 << 20
	// lingerParentWait bounds how long a session whose stream broke waits
	// to learn whether its host died (reparenting follows the host's
	// closing of its sockets by a moment) before it closes as before.
	lingerParentWait = 2 * time.Second
)

// lingerFromEnv reads the linger window and takes LingerEnv out of the
// environment. A value that does not parse is 0: the safe behaviour.
func lingerFromEnv() time.Duration {
	v, ok := os.LookupEnv(LingerEnv)
	if !ok {
		return 0
	}
	_ = os.Unsetenv(LingerEnv)
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0
	}
	return d
}

// HostLingers reports whether plugins started from this process's
// environment linger: the host set LingerEnv to a positive window.
func HostLingers() bool {
	d, err := time.ParseDuration(os.Getenv(LingerEnv))
	return err == nil && d > 0
}

// lingersIn reports whether a plugin started with the environment env
// lingers: its last LingerEnv (the one exec keeps) is a positive window.
// The host gives the window in the plugin's own environment
// (LaunchConfig.Env), not in its process's.
func lingersIn(env []string) bool {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == LingerEnv {
			v = val
		}
	}
	d, err := time.ParseDuration(v)
	return err == nil && d > 0
}

// lingerBuffer keeps the messages a session could not send while its host
// is gone, up to max bytes. Past the bound it drops the oldest events
// (never a turn end, a permission request or a close: the host needs them
// to finish the turn) and counts them.
type lingerBuffer struct {
	max int

	mu      sync.Mutex
	msgs    []toproto.Message
	sizes   []int
	size    int
	dropped int // events dropped
}

func newLingerBuffer(max int) *lingerBuffer { return &lingerBuffer{max: max} }

// push keeps m, dropping the oldest events while the buffer is over its
// bound.
func (b *lingerBuffer) push(m toproto.Message) {
	n := m.Size()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.msgs = append(b.msgs, m)
	b.sizes = append(b.sizes, n)
	b.size += n
	for i := 0; b.size > b.max && i < len(b.msgs); {
		m := b.msgs[i]
		if !m.IsEvents() {
			i++ // not an event batch: kept
			continue
		}
		// Drop the oldest event of the oldest batch.
		b.dropped++
		if m.EventCount() <= 1 {
			b.size -= b.sizes[i]
			b.msgs = append(b.msgs[:i], b.msgs[i+1:]...)
			b.sizes = append(b.sizes[:i], b.sizes[i+1:]...)
			continue
		}
		first := m.DropFirstEvent()
		b.sizes[i] -= first
		b.size -= first
	}
}

// take returns what is buffered, oldest first, led by the warning of the
// events dropped when there were any, and empties the buffer.
func (b *lingerBuffer) take() []toproto.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.msgs
	if b.dropped > 0 {
		w := toproto.Events([]toproto.EncodedEvent{lingerWarning(b.dropped, b.max)})
		out = append([]toproto.Message{w}, out...)
	}
	b.msgs, b.sizes, b.size, b.dropped = nil, nil, 0, 0
	return out
}

// len is the number of messages buffered and the events dropped.
func (b *lingerBuffer) stats() (msgs, bytes, dropped int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.msgs), b.size, b.dropped
}

// lingerWarning is the avenor.warning that tells the host events were
// dropped while it was away.
func lingerWarning(dropped, max int) toproto.EncodedEvent {
	ev, err := toproto.Event(runtime.Event{Type: runtime.EventWarning, Fields: map[string]any{
		"source": "plugin",
		"message": fmt.Sprintf("%d events of this session were dropped while the plugin had no host: it keeps at most %d MiB of them, the newest",
			dropped, max>>20),
		"dropped": dropped,
	}})
	if err != nil {
		panic(err) // a fixed, encodable object
	}
	return ev
}

// sentRing keeps the events last sent, up to MaxReplayEvents and
// maxReplayBytes, oldest first.
type sentRing struct {
	mu    sync.Mutex
	evs   []toproto.EncodedEvent
	bytes int
}

// add keeps the events m carries.
func (r *sentRing) add(m toproto.Message) {
	if m.EventCount() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.evs)
	r.evs = m.AppendEvents(r.evs)
	for _, e := range r.evs[n:] {
		r.bytes += e.Size()
	}
	drop := 0
	for len(r.evs)-drop > MaxReplayEvents || (r.bytes > maxReplayBytes && len(r.evs)-drop > 1) {
		r.bytes -= r.evs[drop].Size()
		drop++
	}
	if drop > 0 {
		r.evs = append([]toproto.EncodedEvent(nil), r.evs[drop:]...)
	}
}

func (r *sentRing) take() []toproto.EncodedEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.evs
	r.evs, r.bytes = nil, 0
	return out
}
