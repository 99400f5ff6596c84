package plugin

import (
	"sync"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"

	"github.com/avenor-go/avenor/sdk/plugin/internal/toproto"
)

// outbox is the single ordered queue of everything a session sends to the
// host. One goroutine drains it; consecutive events are batched into one
// Events message, so a flood costs few stream sends, and a permission
// request or turn end is never sent before the events queued ahead of it.
type outbox struct {
	send   func(toproto.Message) error
	logger hclog.Logger
	ch     chan outItem
	quit   chan struct{} // closed by close() after the final flush
	done   chan struct{} // closed when run() has returned

	mu     sync.Mutex
	closed bool
	err    error
	// linger, when set, keeps what the stream could not take (its host is
	// gone) instead of dropping it (linger.go); sent then keeps the events
	// last sent, which a host that died may not have written (replay).
	linger *lingerBuffer
	sent   *sentRing
}

// keepUnsent makes the outbox buffer, up to MaxLingerBuffer, what it
// cannot send from now on.
func (o *outbox) keepUnsent() {
	o.mu.Lock()
	if o.linger == nil {
		o.linger = newLingerBuffer(MaxLingerBuffer)
		o.sent = &sentRing{}
	}
	o.mu.Unlock()
}

// takeSent returns the events last sent, oldest first.
func (o *outbox) takeSent() []toproto.EncodedEvent {
	o.mu.Lock()
	r := o.sent
	o.mu.Unlock()
	if r == nil {
		return nil
	}
	return r.take()
}

type outItem struct {
	ev    toproto.EncodedEvent
	msg   toproto.Message
	flush chan struct{}
}

// newOutbox sends on stream.
func newOutbox(stream grpc.ServerStream, logger hclog.Logger) *outbox {
	send := func(m toproto.Message) error { return stream.SendMsg(m.Proto()) }
	o := &outbox{send: send, logger: logger, ch: make(chan outItem, outboxSize), quit: make(chan struct{}), done: make(chan struct{})}
	go o.run()
	return o
}

// takeUnsent returns what the outbox kept unsent (keepUnsent), oldest
// first, led by a warning when some was dropped.
func (o *outbox) takeUnsent() []toproto.Message {
	o.mu.Lock()
	buf := o.linger
	o.mu.Unlock()
	if buf == nil {
		return nil
	}
	return buf.take()
}

func (o *outbox) pushEvent(ev toproto.EncodedEvent) { o.put(outItem{ev: ev}) }

func (o *outbox) push(msg toproto.Message) { o.put(outItem{msg: msg}) }

// flush waits until everything queued so far was handed to the stream and
// returns the first send error.
func (o *outbox) flush() error {
	ch := make(chan struct{})
	if o.put(outItem{flush: ch}) {
		select {
		case <-ch:
		case <-o.done:
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

func (o *outbox) put(it outItem) bool {
	o.mu.Lock()
	closed := o.closed
	o.mu.Unlock()
	if closed {
		return false
	}
	// With room in the queue, as under a flood the sender keeps it, a
	// plain send: a two-way select costs several times more per event.
	select {
	case o.ch <- it:
		return true
	default:
	}
	select {
	case o.ch <- it:
		return true
	case <-o.done:
		return false
	}
}

func (o *outbox) close() {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.closed = true
	o.mu.Unlock()
	// Let the sender drain what is queued, then stop it.
	ch := make(chan struct{})
	select {
	case o.ch <- outItem{flush: ch}:
		select {
		case <-ch:
		case <-o.done:
		}
	case <-o.done:
	}
	close(o.quit)
	<-o.done
}

func (o *outbox) run() {
	defer close(o.done)
	var batch toproto.Batch
	size := 0 // the JSON and types in batch
	sendBatch := func() {
		if batch.Len() == 0 {
			return
		}
		o.deliver(batch.Take())
		size = 0
	}
	handle := func(it outItem) {
		switch {
		case !it.ev.IsZero():
			n := it.ev.Bytes() + 8
			if batch.Len() > 0 && size+n > maxBatchBytes {
				sendBatch()
			}
			batch.Add(it.ev)
			size += n
			if batch.Len() >= maxBatch {
				sendBatch()
			}
		case !it.msg.IsZero():
			sendBatch()
			o.deliver(it.msg)
		case it.flush != nil:
			sendBatch()
			close(it.flush)
		}
	}
	for {
		select {
		case it := <-o.ch:
			handle(it)
		case <-o.quit:
			return
		}
		// Drain whatever else is already queued before sending a partial
		// batch: that is what batches a flood without adding latency.
	drain:
		for {
			select {
			case more := <-o.ch:
				handle(more)
			default:
				break drain
			}
		}
		sendBatch()
	}
}

func (o *outbox) deliver(m toproto.Message) {
	o.mu.Lock()
	failed, buf := o.err != nil, o.linger
	o.mu.Unlock()
	if failed {
		if buf != nil {
			buf.push(m)
		}
		return
	}
	if err := o.send(m); err != nil {
		o.mu.Lock()
		o.err = err
		buf = o.linger
		o.mu.Unlock()
		if buf != nil {
			buf.push(m)
		}
		o.logger.Debug("session stream send failed", "error", err)
		return
	}
	o.mu.Lock()
	r := o.sent
	o.mu.Unlock()
	if r != nil {
		r.add(m)
	}
}
