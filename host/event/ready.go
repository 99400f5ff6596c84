package event

import (
	"slices"
	"sync"
)

// Ready lets one reader wait on many subscriptions without a goroutine for
// each: a subscription attached to it marks itself ready whenever its queue
// changes (an event, a drop, the writer's close, Close), and Wait returns
// the subscriptions marked since the last Wait. The reader then takes each
// one's queue with TakeItems. A control connection following every
// runtime of a supervisor holds one goroutine this way, not one per
// runtime.
//
// A subscription is in the ready list at most once, however many events
// arrive before the reader looks, and Wait clears its mark before the
// reader takes its queue, so an event pushed while the reader works marks
// it again: no wake-up is lost. Subscriptions come out in the order they
// became ready, so a reader that takes each one once per Wait serves a
// flooding writer's subscription no more often than a quiet one's.
//
// Ready does not own its subscriptions: closing it ends Wait, not them.
type Ready struct {
	wake chan struct{} // capacity 1: "the list changed"
	done chan struct{} // closed by Close
	once sync.Once

	mu   sync.Mutex
	list []*Subscription // marked, each once (Subscription.marked)
}

// NewReady returns an empty fan-in.
func NewReady() *Ready {
	return &Ready{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// Attach makes s report to r; from here on s is read with TakeItems, by
// r's reader. s is marked ready at once, so whatever it queued before (or
// its end) is seen. A subscription is attached to one Ready at most; it
// leaves it when TakeItems reports its end.
func (r *Ready) Attach(s *Subscription) {
	s.setMode(modeBatch)
	if !s.fan.CompareAndSwap(nil, r) {
		panic("event: a Subscription is attached to one Ready at most")
	}
	r.mark(s)
}

// Wait waits until a subscription is ready and appends the ready ones to
// buf, in the order they became ready, clearing their marks. It returns
// false, with nothing appended, once r is closed.
func (r *Ready) Wait(buf []*Subscription) ([]*Subscription, bool) {
	n := len(buf)
	for {
		select {
		case <-r.done:
			return buf, false
		default:
		}
		r.mu.Lock()
		for _, s := range r.list {
			s.marked = false
		}
		buf = append(buf, r.list...)
		clear(r.list)
		r.list = r.list[:0]
		r.mu.Unlock()
		if len(buf) > n {
			return buf, true
		}
		select {
		case <-r.wake:
		case <-r.done:
			return buf, false
		}
	}
}

// Close ends Wait, now and later; it is idempotent. The subscriptions stay
// open: their owner closes them.
func (r *Ready) Close() { r.once.Do(func() { close(r.done) }) }

// mark puts s in the ready list unless it is there already (or has left
// r), and wakes the reader.
func (r *Ready) mark(s *Subscription) {
	r.mu.Lock()
	if s.marked || s.fan.Load() != r {
		r.mu.Unlock()
		return
	}
	s.marked = true
	r.list = append(r.list, s)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// detach takes s out of r: it is not marked again, and a mark it has is
// withdrawn, so Wait never returns a subscription that has left.
func (r *Ready) detach(s *Subscription) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.fan.Load() != r {
		return
	}
	s.fan.Store(nil)
	if !s.marked {
		return
	}
	s.marked = false
	if i := slices.Index(r.list, s); i >= 0 {
		r.list = slices.Delete(r.list, i, i+1) // zeroes the freed slot
	}
}
