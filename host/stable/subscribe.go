package stable

import (
	"context"
	"sync"

	"github.com/avenor-go/avenor/host/event"
)

// SubscriberQueue is each runtime subscription's queue (docs/control-protocol.md#subscribe).
const SubscriberQueue = event.DefaultQueue

// allSub is a subscription to every runtime, present and future (subscribe
// without runtime_id; the HTTP debug adapter's /events). Each runtime's
// events come through a subscription of their own, so seq order, the
// bounded queue and subscriber.lagged hold per runtime.
type allSub struct {
	ctx context.Context
	// attach starts delivering one runtime's subscription; it owns sub.
	attach func(sub *event.Subscription)

	mu      sync.Mutex
	started bool
	pending []*event.Subscription
}

// add delivers sub now, or once the subscriber is started.
func (a *allSub) add(sub *event.Subscription) {
	a.mu.Lock()
	if !a.started {
		a.pending = append(a.pending, sub)
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	a.attach(sub)
}

// start delivers what was subscribed before it and everything after.
func (a *allSub) start() {
	a.mu.Lock()
	a.started = true
	pending := a.pending
	a.pending = nil
	a.mu.Unlock()
	for _, sub := range pending {
		a.attach(sub)
	}
}

// drop closes what was never delivered (the subscriber went away first).
func (a *allSub) drop() {
	a.mu.Lock()
	pending := a.pending
	a.pending = nil
	a.started = true
	a.mu.Unlock()
	for _, sub := range pending {
		sub.Close()
	}
}

// subscribeAll registers a subscriber to every runtime; it starts
// delivering when start is called.
func (s *Supervisor) subscribeAll(ctx context.Context, attach func(*event.Subscription)) *allSub {
	a := &allSub{ctx: ctx, attach: attach}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneSubsLocked()
	for _, rt := range s.runtimes {
		a.pending = append(a.pending, rt.run.Events().Subscribe(SubscriberQueue))
	}
	s.allSubs = append(s.allSubs, a)
	return a
}

// attachLocked subscribes every live all-runtime subscriber to a new
// runtime's stream.
func (s *Supervisor) attachLocked(rt *runtime) {
	s.pruneSubsLocked()
	for _, a := range s.allSubs {
		a.add(rt.run.Events().Subscribe(SubscriberQueue))
	}
}

// pruneSubsLocked forgets subscribers whose context ended.
func (s *Supervisor) pruneSubsLocked() {
	kept := s.allSubs[:0]
	for _, a := range s.allSubs {
		if a.ctx.Err() != nil {
			a.drop()
			continue
		}
		kept = append(kept, a)
	}
	for i := len(kept); i < len(s.allSubs); i++ {
		s.allSubs[i] = nil
	}
	s.allSubs = kept
}

// AllSubscription is every runtime's events, present and future, on one
// channel (the HTTP debug adapter's /events without runtime_id); it
// implements the adapter's Subscription. Per runtime the events are in seq
// order, and a slow reader gets subscriber.lagged per runtime, as on the
// socket.
type AllSubscription struct {
	out    chan event.Event
	ctx    context.Context
	cancel context.CancelFunc
	exited chan struct{}
	once   sync.Once

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// SubscribeAll subscribes to every runtime from now on. Its channel closes
// after Close or when the supervisor has stopped.
func (s *Supervisor) SubscribeAll() (*AllSubscription, error) {
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		return nil, ErrShuttingDown
	}
	ctx, cancel := context.WithCancel(context.Background())
	as := &AllSubscription{out: make(chan event.Event), ctx: ctx, cancel: cancel, exited: make(chan struct{})}
	a := s.subscribeAll(ctx, as.attach)
	a.start()
	go func() {
		select {
		case <-ctx.Done():
		case <-s.done:
		}
		as.finish()
		s.mu.Lock()
		s.pruneSubsLocked()
		s.mu.Unlock()
	}()
	return as, nil
}

// C delivers the events.
func (as *AllSubscription) C() <-chan event.Event { return as.out }

// Close ends the subscription and waits for its goroutines; idempotent.
func (as *AllSubscription) Close() {
	as.cancel()
	<-as.exited
}

func (as *AllSubscription) attach(sub *event.Subscription) {
	as.mu.Lock()
	if as.closed {
		as.mu.Unlock()
		sub.Close()
		return
	}
	as.wg.Add(1)
	as.mu.Unlock()
	go func() {
		defer as.wg.Done()
		defer sub.Close()
		for {
			select {
			case ev, ok := <-sub.C():
				if !ok {
					return
				}
				select {
				case as.out <- ev:
				case <-as.ctx.Done():
					return
				}
			case <-as.ctx.Done():
				return
			}
		}
	}()
}

func (as *AllSubscription) finish() {
	as.once.Do(func() {
		as.mu.Lock()
		as.closed = true
		as.mu.Unlock()
		as.cancel()
		as.wg.Wait()
		close(as.out)
		close(as.exited)
	})
}
