package event

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of the event log: a log that cannot take the lines
// must never hold up the runtime, the control plane, signals or timeouts.
const (
	// MaxQueuedLogBytes bounds the lines waiting for the log goroutine. A
	// Write that finds this much queued waits (without holding the Writer's
	// lock) until the goroutine takes the batch, so a log slower than the
	// runtime slows the runtime down instead of growing memory. 1 MiB is
	// ~5 000 typical event lines: far more than one write needs to amortise
	// its system call, small next to the host's other buffers.
	MaxQueuedLogBytes = 1 << 20
	// MaxQueuedLogBytesTotal bounds the lines waiting for the logs of all
	// the writers of the process together, above each writer's
	// MinQueuedLogBytes: with hundreds of runtimes on a supervisor that
	// falls behind, each writer's own bound alone let the queues grow to
	// hundreds of MB. A Write that finds its writer's queue past
	// MinQueuedLogBytes while the total is past this waits like one that
	// finds MaxQueuedLogBytes queued. A writer also holds the batch being
	// written beside its queue: with a 16 MiB total and a 64 KiB floor,
	// 200 writers whose logs were held kept 35 MB queued and 58 MB of
	// heap; with these, 14 MB and 28 MB.
	MaxQueuedLogBytesTotal = 8 << 20
	// MinQueuedLogBytes is what each writer may always queue, whatever the
	// others hold (~60 typical lines: still many per system call). It is
	// a per-runtime cost while a log falls behind, twice over (the queue
	// and the batch being written).
	MinQueuedLogBytes = 16 << 10
	// MaxWriteStall is how long one write to the log may take before the
	// log is given up as stalled (a hung NFS server, a frozen disk): the
	// Writer then fails with ErrStalled, drops its later lines, and the run
	// that owns it ends FAILED. It also bounds every wait of a Write for
	// the log. A healthy disk writes a 1 MiB batch in milliseconds.
	MaxWriteStall = 10 * time.Second
)

// maxBatchBuffer bounds a batch buffer kept for the next batch: one grown
// by a huge event is dropped after its batch. A writer that goes idle for
// long (parked, closed) gives its buffers back (trim): a flood's two
// buffers of up to this size each were kept for the runtime's life.
const maxBatchBuffer = 1 << 20

// queuedLogBytes is the bytes all the batchers of the process hold queued
// or being written (MaxQueuedLogBytesTotal).
var queuedLogBytes atomic.Int64

// overLocked reports whether a Write must wait for room: the writer's own
// bound, or past its floor while the process's total is past its bound.
// b.mu is held.
func (b *batcher) overLocked() bool {
	n := len(b.pending)
	return n >= MaxQueuedLogBytes || n >= MinQueuedLogBytes && queuedLogBytes.Load() >= MaxQueuedLogBytesTotal
}

// batcher is the log side of a Writer: Write appends whole lines to pending
// and returns; one goroutine writes pending to the log, all of it in one
// Write call, and repeats while more arrived meanwhile. It exists only while
// there is something to write, so an idle Writer owns no goroutine and a
// lone line is written at once — there is no timer and no added delay.
// Under a flood the runtime's goroutine stamps and encodes while this one
// writes, and one system call carries many lines. Lines are appended whole
// and written in the order of seq; a line is never split between two
// writes. A batch goes out in writes that each stay inside one page of the
// log (see writeLines), so a SIGKILL mid-flood tears no line.
//
// The log's first failure — a write error, or a write that has not returned
// after the stall bound — is final:
// failed is closed, nothing more is written, and every wait ends. A write
// that never returns keeps its goroutine for good; nothing else waits for
// it, so the process can still end.
type batcher struct {
	out   io.Writer
	stall time.Duration

	mu      sync.Mutex
	cond    *sync.Cond // written advanced, pending was taken, run returned, or the log failed
	pending []byte     // whole lines not yet handed to out
	spare   []byte     // the other buffer, reused for the next batch while run runs
	queued  int64      // bytes ever appended to pending
	written int64      // bytes ever written to out
	offset  int64      // the log's size: where the next write lands (run's)
	running bool       // run is active
	// writing: run is inside out.Write since writeStart; watchdog fires
	// stall after each write starts.
	writing    bool
	writeStart time.Time
	watchdog   *time.Timer
	err        error // the first failure
	// failed is cancelled when err is set: its Done is Writer.Failed,
	// and Writer.AfterFailed calls back on it without a goroutine.
	failed     context.Context
	failCancel context.CancelFunc
	told       bool // err was returned by a Write (Writer.write)

	// full mirrors overLocked or a failure, so a
	// Write's wait for room costs one atomic load when there is room.
	full atomic.Bool
	// failedFlag mirrors err != nil, so news costs one atomic load on
	// every Write of a healthy log.
	failedFlag atomic.Bool
}

func newBatcher(out io.Writer, stall time.Duration) *batcher {
	if stall <= 0 {
		stall = MaxWriteStall
	}
	b := &batcher{out: out, stall: stall}
	b.failed, b.failCancel = context.WithCancel(context.Background())
	// A log opened by its owner may not start empty; a pipe cannot seek,
	// and there the page alignment does no harm (writes up to a page are
	// atomic on a pipe).
	if s, ok := out.(io.Seeker); ok {
		if off, err := s.Seek(0, io.SeekCurrent); err == nil {
			b.offset = off
		}
	}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// logPage is the unit a write to a regular file is cut at by a fatal
// signal: the kernel copies a write page by page and, before each page,
// gives up when the process is being killed, keeping what it copied.
var logPage = int64(os.Getpagesize())

// writeLines writes buf, whole lines, to the log in writes that never cross
// a page boundary of the file, except a line that itself straddles one,
// which goes alone. A write inside one page is whole or absent under
// SIGKILL, so a kill mid-flood can tear only a straddling line, and only
// in the instant a write of its own is between its two pages — as when
// every line had a write of its own — never a batch's worth of lines
// It runs on the log goroutine only.
func (b *batcher) writeLines(buf []byte) error {
	for len(buf) > 0 {
		room := int(logPage - b.offset%logPage)
		end := 0
		for end < len(buf) {
			i := bytes.IndexByte(buf[end:], '\n')
			if i < 0 {
				i = len(buf) - end - 1
			}
			if end > 0 && end+i+1 > room {
				break
			}
			end += i + 1
			if end > room {
				break // the first line straddles the boundary: alone
			}
		}
		n, err := b.out.Write(buf[:end])
		b.offset += int64(n)
		if err != nil {
			return err
		}
		buf = buf[end:]
	}
	return nil
}

// waitRoom returns once the queue has room or the log has failed. It is
// called without the Writer's lock, so a full queue never holds up
// History, LatestSeq or Subscribe. The wait is bounded by the watchdog:
// the queue is full only while run is inside a write (it takes the whole
// queue each time), and a write that outlasts the stall bound fails the
// log. Writes racing past it may overshoot MaxQueuedLogBytes by one line
// each.
func (b *batcher) waitRoom() {
	if !b.full.Load() {
		return
	}
	b.mu.Lock()
	for b.err == nil && b.overLocked() {
		b.cond.Wait()
	}
	b.mu.Unlock()
}

// add queues one whole line; it copies line and returns the queue offset
// the line ends at (for waitWritten). Called with Writer.mu held, so lines
// are queued in seq order. After a failure the line is dropped.
func (b *batcher) add(line []byte) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return b.queued
	}
	b.pending = append(b.pending, line...)
	b.queued += int64(len(line))
	queuedLogBytes.Add(int64(len(line)))
	if b.overLocked() {
		b.full.Store(true)
	}
	if !b.running {
		b.running = true
		go b.run()
	}
	return b.queued
}

// run writes batches until nothing is pending or the log failed, then
// returns.
func (b *batcher) run() {
	b.mu.Lock()
	for len(b.pending) > 0 && b.err == nil {
		buf := b.pending
		b.pending, b.spare = b.spare[:0], nil
		b.full.Store(false)
		b.cond.Broadcast() // room for a waiting Write
		b.writing, b.writeStart = true, time.Now()
		if b.watchdog == nil {
			b.watchdog = time.AfterFunc(b.stall, b.checkStall)
		} else {
			b.watchdog.Reset(b.stall)
		}
		b.mu.Unlock()

		err := b.writeLines(buf)
		queuedLogBytes.Add(-int64(len(buf)))

		b.mu.Lock()
		b.writing = false
		b.watchdog.Stop()
		switch {
		case b.err != nil:
			// Given up while the write hung: whatever it wrote, the log
			// is already reported incomplete.
		case err != nil:
			b.failLocked(fmt.Errorf("write %d events to the event log: %w", bytes.Count(buf, []byte{'\n'}), err))
		default:
			b.written += int64(len(buf))
		}
		if cap(buf) <= maxBatchBuffer {
			b.spare = buf
		}
		b.cond.Broadcast()
	}
	if b.err != nil {
		queuedLogBytes.Add(-int64(len(b.pending)))
		b.pending, b.spare = nil, nil
	}
	b.running = false
	b.cond.Broadcast()
	b.mu.Unlock()
}

// trim gives back the queue's buffers when nothing is queued or being
// written, for a writer that will be idle for long.
func (b *batcher) trim() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.running && len(b.pending) == 0 {
		b.pending, b.spare = nil, nil
	}
}

// checkStall is the watchdog of the write in progress: one that has not
// returned after the stall bound fails the log. A stale firing (the write
// ended, or a newer one began) finds writing false or a later start.
func (b *batcher) checkStall() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.writing && b.err == nil && time.Since(b.writeStart) >= b.stall {
		b.failLocked(fmt.Errorf("%w: a write to the event log has not returned for %v (a hung disk or file system)", ErrStalled, b.stall))
	}
}

// failLocked records the log's first failure and ends every wait.
func (b *batcher) failLocked(err error) {
	if b.err != nil {
		return
	}
	b.err = err
	b.failedFlag.Store(true)
	b.full.Store(true) // waitRoom takes the slow path and sees err
	b.failCancel()
	b.cond.Broadcast()
}

// waitWritten waits until the queue up to offset is in the log or the log
// failed.
func (b *batcher) waitWritten(offset int64) {
	b.mu.Lock()
	for b.written < offset && b.err == nil {
		b.cond.Wait()
	}
	b.mu.Unlock()
}

// flush waits until every line queued before the call is in the log and,
// when nothing newer is queued, until the goroutine has returned; or until
// the log failed, leaving a goroutine stuck in a write behind.
func (b *batcher) flush() {
	b.mu.Lock()
	target := b.queued
	for b.err == nil && (b.written < target || (b.running && b.queued == target)) {
		b.cond.Wait()
	}
	b.mu.Unlock()
}

// news returns the first failure once, for the Write that follows it.
func (b *batcher) news() error {
	if !b.failedFlag.Load() {
		return nil
	}
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

// idle reports whether no goroutine is writing (tests: a writer released
// after a stall lets its goroutine end).
func (b *batcher) idle() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.running
}
