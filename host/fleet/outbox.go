package fleet

import (
	"context"
	"sync"
)

// PublishWindow bounds the events a node has in flight to JetStream at
// once, across its runtimes (a row in internal/docgen/bounds.go). Each
// runtime has at most one: its next event is published once the last is
// stored, so the stream keeps every runtime's order even when a publish
// fails and is retried, and the de-duplication id (<fleet id>/<seq>) stores
// a retried one once. The window lets the runtimes' publishes overlap
// instead of waiting on one another's acks.
const PublishWindow = 64

// outbox holds one runtime's fleet events waiting to be published, in
// order; a drainer goroutine runs while it is not empty. Guarded by its
// own mutex.
type outbox struct {
	mu      sync.Mutex
	queue   []outEvent
	running bool
}

// outEvent is one fleet event: its rewritten bytes and its fleet seq.
type outEvent struct {
	data []byte
	seq  int64
}

// enqueue adds a rewritten event to o's outbox and starts its drainer when
// none runs.
func (n *node) enqueue(ctx context.Context, o *owned, data []byte, seq int64) {
	b := &o.out
	b.mu.Lock()
	b.queue = append(b.queue, outEvent{data: data, seq: seq})
	start := !b.running
	b.running = true
	b.mu.Unlock()
	if start {
		n.drainers.Add(1)
		go func() {
			defer n.drainers.Done()
			n.drain(ctx, o)
		}()
	}
}

// drain publishes o's queued events one after another, each within the
// node's window, and keeps the registry in step; it ends when the outbox
// is empty. A runtime this node no longer owns (it moved while the node
// was cut off) publishes nothing more from here.
func (n *node) drain(ctx context.Context, o *owned) {
	b := &o.out
	for {
		b.mu.Lock()
		if len(b.queue) == 0 || ctx.Err() != nil || !n.ownsThis(o) {
			b.queue, b.running = nil, false
			b.mu.Unlock()
			return
		}
		ev := b.queue[0]
		b.queue = b.queue[1:]
		b.mu.Unlock()
		select {
		case n.window <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		ok := n.publishEvent(ctx, o.e.RuntimeID, ev.seq, ev.data)
		<-n.window
		if ok {
			n.track(ctx, o, ev.data)
		}
	}
}

// ownsThis reports whether o is still this node's record of its runtime.
func (n *node) ownsThis(o *owned) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.byFleet[o.e.RuntimeID] == o
}
