package event

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// maxPendingBytes bounds the lines queued for a batched Writer's log
// goroutine. A Write that finds this much still queued waits until the
// goroutine takes the batch, so a log slower than the runtime slows the
// runtime down instead of growing memory. 1 MiB is ~5 000 typical event
// lines: far more than one write needs to amortise its system call, small
// next to the host's other buffers.
const maxPendingBytes = 1 << 20

// batcher is the log side of a batched Writer (Options.Batched): Write
// appends whole lines to pending and returns; one goroutine writes pending
// to the log, all of it in one Write call, and repeats while more arrived
// meanwhile. It exists only while there is something to write, so an idle
// Writer owns no goroutine and a lone line is written at once — there is
// no timer and no added delay. Under a flood the runtime's goroutine stamps
// and encodes while this one writes, and one system call carries many
// lines. Lines are appended whole and written in the order of seq; a line
// is never split between two writes.
type batcher struct {
	out io.Writer

	mu      sync.Mutex
	cond    *sync.Cond // written advanced, pending was taken, or run returned
	pending []byte     // whole lines not yet handed to out
	spare   []byte     // the other buffer, reused for the next batch
	queued  int64      // bytes ever appended to pending
	written int64      // bytes ever handed to out (written or failed)
	running bool       // run is active
	err     error      // the first write error
	told    bool       // err was returned by a Write (Writer.write)
}

func newBatcher(out io.Writer) *batcher {
	b := &batcher{out: out}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// add queues one whole line; it copies line. Called with Writer.mu held,
// so lines are queued in seq order.
func (b *batcher) add(line []byte) {
	b.mu.Lock()
	for len(b.pending) >= maxPendingBytes {
		b.cond.Wait()
	}
	b.pending = append(b.pending, line...)
	b.queued += int64(len(line))
	if !b.running {
		b.running = true
		go b.run()
	}
	b.mu.Unlock()
}

// run writes batches until nothing is pending, then returns.
func (b *batcher) run() {
	b.mu.Lock()
	for len(b.pending) > 0 {
		buf := b.pending
		b.pending, b.spare = b.spare[:0], nil
		b.cond.Broadcast() // room for a waiting add
		b.mu.Unlock()

		_, err := b.out.Write(buf)

		b.mu.Lock()
		if err != nil && b.err == nil {
			b.err = fmt.Errorf("write %d events to the event log: %w", bytes.Count(buf, []byte{'\n'}), err)
		}
		b.written += int64(len(buf))
		if cap(buf) <= maxKeptBuffer {
			b.spare = buf
		}
		b.cond.Broadcast()
	}
	b.running = false
	b.cond.Broadcast()
	b.mu.Unlock()
}

// flush waits until every line queued before the call was handed to out
// and, when nothing newer is queued, until the goroutine has returned.
func (b *batcher) flush() {
	b.mu.Lock()
	target := b.queued
	for b.written < target || (b.running && b.queued == target) {
		b.cond.Wait()
	}
	b.mu.Unlock()
}

// news returns the first write error once, for the Write that follows it.
func (b *batcher) news() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil || b.told {
		return nil
	}
	b.told = true
	return b.err
}

func (b *batcher) error() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
