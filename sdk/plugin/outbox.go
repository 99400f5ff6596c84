package plugin

import (
	"sync"

	"github.com/hashicorp/go-hclog"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
)

// outbox is the single ordered queue of everything a session sends to the
// host. One goroutine drains it; consecutive events are batched into one
// Events message, so a flood costs few stream sends, and a permission
// request or turn end is never sent before the events queued ahead of it.
type outbox struct {
	send   func(*pb.PluginMessage) error
	logger hclog.Logger
	ch     chan outItem
	quit   chan struct{} // closed by close() after the final flush
	done   chan struct{} // closed when run() has returned

	mu     sync.Mutex
	closed bool
	err    error
}

type outItem struct {
	ev    *pb.Event
	msg   *pb.PluginMessage
	flush chan struct{}
}

type sender interface {
	Send(*pb.PluginMessage) error
}

func newOutbox(s sender, logger hclog.Logger) *outbox {
	o := &outbox{send: s.Send, logger: logger, ch: make(chan outItem, outboxSize), quit: make(chan struct{}), done: make(chan struct{})}
	go o.run()
	return o
}

func (o *outbox) pushEvent(ev *pb.Event) { o.put(outItem{ev: ev}) }

func (o *outbox) push(msg *pb.PluginMessage) { o.put(outItem{msg: msg}) }

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
	var batch []*pb.Event
	sendBatch := func() {
		if len(batch) == 0 {
			return
		}
		o.deliver(&pb.PluginMessage{Msg: &pb.PluginMessage_Events{Events: &pb.Events{Events: batch}}})
		batch = nil
	}
	handle := func(it outItem) {
		switch {
		case it.ev != nil:
			batch = append(batch, it.ev)
			if len(batch) >= maxBatch {
				sendBatch()
			}
		case it.msg != nil:
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

func (o *outbox) deliver(m *pb.PluginMessage) {
	o.mu.Lock()
	failed := o.err != nil
	o.mu.Unlock()
	if failed {
		return
	}
	if err := o.send(m); err != nil {
		o.mu.Lock()
		o.err = err
		o.mu.Unlock()
		o.logger.Debug("session stream send failed", "error", err)
	}
}
