package httpdebug

import (
	"sync"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/event"
)

// TableRuntime is one runtime of the control method table as the adapter
// serves it: every control.Target (the runtime of `avenor run`, a stable
// runtime) satisfies it, so GET /status, POST /cancel and POST /answer-permission
// answer exactly what the socket's status, cancel and answer_permission do.
type TableRuntime interface {
	Status() any
	Cancel()
	Events() *event.Writer
	AnswerPermission(requestID, optionID, message string) error
}

// TableTarget is a Target over one runtime of the control method table:
// the table's status, cancel and answer_permission, and subscriptions with
// subscribe's replay and de-duplication that end once the runtime has
// ended and every event up to its last was delivered.
//
// The runtime's event writer stays open after its run, so TableTarget
// needs End to know when its streams are complete.
type TableTarget struct {
	rt      TableRuntime
	pending func() bool

	endOnce sync.Once
	ended   chan struct{}
}

// NewTableTarget returns the target for rt; pending reports a permission
// request waiting for an answer (nil: never, every answer gets 409).
func NewTableTarget(rt TableRuntime, pending func() bool) *TableTarget {
	return &TableTarget{rt: rt, pending: pending, ended: make(chan struct{})}
}

// End says the run has ended: every stream delivers the events written so
// far and then ends. Call it once the runtime has ended; it is idempotent.
func (o *TableTarget) End() { o.endOnce.Do(func() { close(o.ended) }) }

// Status implements Target: the table's status (docs/control-protocol.md#status, docs/control-protocol.md#spawn).
func (o *TableTarget) Status() any { return o.rt.Status() }

// Cancel implements Target: as SIGINT, stop reason cancelled, exit 130.
func (o *TableTarget) Cancel() error {
	o.rt.Cancel()
	return nil
}

// AnswerPermission implements Target.
func (o *TableTarget) AnswerPermission(requestID, optionID, message string) error {
	if o.pending == nil || !o.pending() {
		return ErrNoPendingPermission
	}
	return o.rt.AnswerPermission(requestID, optionID, message)
}

// Subscribe implements Target. Replay and subscription are taken
// atomically; without replay the stream starts at the next event.
func (o *TableTarget) Subscribe(opts SubscribeOptions) (Subscription, error) {
	w := o.rt.Events()
	// A replay of at least one event also tells where the live events
	// start: its last event is the writer's latest.
	n := 1
	if opts.Replay {
		n = opts.Limit
	}
	replay, inner := w.SubscribeWithReplay(opts.AfterSeq, n, control.SubscriberQueue)
	start := opts.AfterSeq
	if len(replay) > 0 {
		if seq, ok := control.SeqOf(replay[len(replay)-1]); ok && seq > start {
			start = seq
		}
	}
	if !opts.Replay {
		replay = nil
	}
	s := &tableSub{out: make(chan event.Event), done: make(chan struct{}), exited: make(chan struct{})}
	go s.forward(replay, inner, opts.AfterSeq, start, o.ended, w.LatestSeq)
	return s, nil
}

// tableSub forwards a replay and an event.Subscription, de-duplicated by
// seq, and ends once the run has ended and its last event was sent.
type tableSub struct {
	out    chan event.Event
	done   chan struct{}
	exited chan struct{}
	once   sync.Once
}

func (s *tableSub) C() <-chan event.Event { return s.out }

func (s *tableSub) Close() {
	s.once.Do(func() { close(s.done) })
	<-s.exited
}

// forward sends replay, then the live events of inner (all with seq >
// start). last is the highest seq sent; once ended is closed, the stream
// ends when last reaches the writer's latest seq at that moment — the run
// writes nothing after it ends.
func (s *tableSub) forward(replay []event.Event, inner *event.Subscription, last, start int64, ended <-chan struct{}, latest func() int64) {
	defer close(s.exited)
	defer close(s.out)
	defer inner.Close()
	send := func(ev event.Event) bool {
		if seq, ok := control.SeqOf(ev); ok {
			if seq <= last {
				return true
			}
			last = seq
		}
		select {
		case s.out <- ev:
			return true
		case <-s.done:
			return false
		}
	}
	for _, ev := range replay {
		if !send(ev) {
			return
		}
	}
	last = max(last, start)
	endAt := int64(-1)
	for endAt < 0 || last < endAt {
		select {
		case ev, ok := <-inner.C():
			if !ok || !send(ev) {
				return
			}
		case <-ended:
			endAt, ended = latest(), nil
		case <-s.done:
			return
		}
	}
}
