package control

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/host/event"
)

// A connection's subscriptions share one batch buffer (the connection's
// forwarder's): after a burst that reached each subscription in big
// batches (the subscriber read nothing until the burst was written, so the
// socket filled and the queues grew), the heap goes back to what it was
// before. A forwarder per runtime per subscriber kept the largest batch it
// had sent, up to a queue's worth of lines each.
func TestIdleForwardersHoldNoBatch(t *testing.T) {
	const subs, events = 40, event.DefaultQueue
	rt := newFakeRuntime()
	s := startRun(t, rt, runOptions{}, Config{})
	c := dialRaw(t, s.Path())
	for i := range subs {
		if got := c.call(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"subscribe"}`); !strings.Contains(got, `"subscribed":true`) {
			t.Fatal(got)
		}
	}
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	pad := strings.Repeat("x", 300)
	for i := range events {
		rt.write(t, event.Event{"event": "agent.message_chunk", "i": i, "pad": pad})
	}
	// Every subscription delivers every event (or a lag notice for some).
	got := 0
	for got < subs*events {
		line := c.recv()
		if strings.Contains(line, `"subscriber.lagged"`) {
			t.Fatalf("a subscription lagged: %s", line)
		}
		if strings.Contains(line, `"agent.message_chunk"`) {
			got++
		}
	}
	after := heap()
	grown := int64(after) - int64(before)
	t.Logf("heap grew %d bytes over %d idle forwarders after a burst of %d events", grown, subs, events)
	// The writer's history of these events stays (~130 KB), and one
	// batch buffer is the connection's: 40 kept batches were 3.6 MB.
	if limit := int64(2 * events * (len(pad) + 200)); grown > limit {
		t.Errorf("the heap grew %d bytes after the burst, over %d: idle forwarders keep their batch buffers", grown, limit)
	}
}
