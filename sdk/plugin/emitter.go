package plugin

import (
	"github.com/avenor-go/avenor/sdk/runtime"
)

// emitterQueue bounds the batches of decoded events waiting for the host:
// up to emitterQueue Events messages (each at most maxBatch events). When
// it is full the receive loop waits, the stream's flow control holds the
// plugin back, and nothing is dropped.
const emitterQueue = 4

// emitter hands decoded events to runtime.Host.Emit on a goroutine of its
// own, so the session's receive loop reads and decodes the next batch while
// the host stamps and writes this one: under a flood the two halves run on
// two cores (bench/RESULTS.md). Order is kept: batches are emitted in the order
// given, and drain waits until everything given so far was emitted, which
// the receive loop does before it acts on any other message. The goroutine
// belongs to the receive loop, which stops it before it returns.
type emitter struct {
	host  runtime.Host
	items chan emitItem
	done  chan struct{}
}

type emitItem struct {
	events  []runtime.Event
	wire    []wireEvent   // for a runtime.JSONEmitter host: as received
	drained chan struct{} // non-nil: a drain marker, closed when reached
}

func newEmitter(host runtime.Host) *emitter {
	e := &emitter{host: host, items: make(chan emitItem, emitterQueue), done: make(chan struct{})}
	go e.run()
	return e
}

// emitWire queues a batch as received, for a host that takes JSON
// (runtime.JSONEmitter); it waits as emit does.
func (e *emitter) emitWire(events []wireEvent) {
	if len(events) > 0 {
		e.items <- emitItem{wire: events}
	}
}

func (e *emitter) run() {
	defer close(e.done)
	for it := range e.items {
		if it.drained != nil {
			close(it.drained)
			continue
		}
		for _, ev := range it.events {
			e.host.Emit(ev)
		}
		if len(it.wire) > 0 {
			je := e.host.(runtime.JSONEmitter)
			for _, we := range it.wire {
				je.EmitJSON(we.typ, we.json)
			}
		}
	}
}

// emit queues a batch; it waits while emitterQueue batches are queued.
func (e *emitter) emit(events []runtime.Event) {
	if len(events) > 0 {
		e.items <- emitItem{events: events}
	}
}

// drain waits until every batch queued before it was emitted.
func (e *emitter) drain() {
	ch := make(chan struct{})
	e.items <- emitItem{drained: ch}
	<-ch
}

// stop emits what is queued and ends the goroutine.
func (e *emitter) stop() {
	close(e.items)
	<-e.done
}
