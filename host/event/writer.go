package event

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Defaults for Options and Subscribe (docs/control-protocol.md#subscribe: per-runtime history
// window and per-subscriber queue are both 256 events).
const (
	DefaultHistory = 256
	DefaultQueue   = 256
)

// The memory of an idle runtime's event stream, the part of a runtime's
// cost in the supervisor that host/event owns (docs/configuration.md).
// Nothing is preallocated for the history window or a subscriber's queue;
// each grows with the traffic; a drained queue is given back at once, and
// what else was sized for a burst (batch buffers, encode scratch, the
// history's slack) when the runtime is parked (BoundFinalOutput) or ends
// (Close). TestIdleWriterMemory and TestIdleSubscriptionMemory hold them.
const (
	// IdleWriterBytes bounds the heap one Writer holds once parked after
	// a turn of ordinary events (a full 256-event history of ~285-byte
	// lines, 73 KB of them whole), with one drained subscriber: 42.5 KB
	// measured (2026-12-04), 56 KB while session_update was kept in
	// every line.
	IdleWriterBytes = 48 << 10
	// IdleSubscriptionBytes bounds the heap of a subscription with
	// nothing queued.
	IdleSubscriptionBytes = 1 << 10
)

// Errors returned by Writer.Write.
var (
	// ErrNoType: the event has no string "event" key, so no consumer could
	// classify it. The fault is the emitter's.
	ErrNoType = errors.New(`event: missing "event" type`)
	// ErrClosed: the writer was closed (the runtime ended).
	ErrClosed = errors.New("event: writer closed")
	// ErrStalled is wrapped by the failure of a log whose write did not
	// return within MaxWriteStall. The fault is the log's (its disk or
	// file system).
	ErrStalled = errors.New("event log stalled")
)

// Stamp holds the envelope fields a Writer adds to every event that lacks
// them (docs/events.md#the-envelope).
type Stamp struct {
	// RunID is stamped as run_id; omitted when empty.
	RunID string
	// RunLabel is stamped as run_label (--label); omitted when empty.
	RunLabel string
	// RuntimeID is stamped as runtime_id (stable children); omitted when empty.
	RuntimeID string
	// Now is the clock for ts; nil means time.Now. It is called from the
	// writer and from subscription goroutines, so it must be safe for
	// concurrent use.
	Now func() time.Time
}

// Options configures a Writer. The zero value is usable.
type Options struct {
	// History is how many of the latest events History and
	// SubscribeWithReplay can return. Zero or negative means DefaultHistory.
	History int
	// Batched lets Write return once its line is queued: history and
	// subscribers get the event at once, and the line reaches the log a
	// moment later — at once when nothing else is queued, together with
	// the lines queued behind it under a flood. The caller must Flush (or
	// Close) before anything that says the log is complete, such as the
	// sentinel file, and before the process exits. Default false: Write
	// returns once its line is in the log (or the log has failed).
	// Either way the line is written by the Writer's log goroutine, never
	// under the Writer's lock, so a log that blocks holds up only the
	// Writes waiting for it, and those for at most the stall bound.
	Batched bool
	// MaxWriteStall is how long the log may block before it is given up
	// (ErrStalled). Zero or negative means MaxWriteStall; tests shorten it.
	MaxWriteStall time.Duration
	// StartSeq is the seq of the last line already in the log the Writer
	// appends to: its first event gets StartSeq+1. Default 0, a new log. A
	// supervisor that recovers a runtime after its predecessor died uses
	// it to continue the runtime's log without a gap or a duplicate seq.
	StartSeq int64
}

// Writer stamps events, appends them to the NDJSON log, remembers the latest
// ones and fans them out to subscribers. One Writer serves one runtime; it is
// safe for concurrent use, and the order of seq is the order of lines in the
// log and the order every subscriber sees.
type Writer struct {
	stamp Stamp
	now   func() time.Time

	mu        sync.Mutex
	seq       int64
	sessionID string
	line      []byte // the line being encoded (kept up to maxIdleLine)
	shared    []byte // where the lines handed out are copied to (share)
	enc       lineEncoder
	history   ring
	subs      map[*Subscription]struct{}
	closed    bool

	batch   *batcher // the log's queue and goroutine; nil without a log
	batched bool     // Options.Batched
	// failed is done when the log fails; never without a log.
	failed context.Context
}

// NewWriter returns a Writer appending to out; a nil out discards the lines
// (no --on-event) while history and subscribers still work. The Writer never
// closes out.
func NewWriter(out io.Writer, stamp Stamp, opts Options) *Writer {
	w := &Writer{
		stamp: stamp,
		now:   stamp.Now,
		subs:  map[*Subscription]struct{}{},
	}
	if w.now == nil {
		w.now = time.Now
	}
	size := opts.History
	if size <= 0 {
		size = DefaultHistory
	}
	w.history = newRing(size)
	if opts.StartSeq > 0 {
		w.seq = opts.StartSeq
	}
	w.failed = context.Background() // never done: without a log nothing fails
	if out != nil {
		w.batch = newBatcher(out, opts.MaxWriteStall)
		w.batched = opts.Batched
		w.failed = w.batch.failed
	}
	return w
}

// SetSessionID sets the runtime's current session id, stamped as session_id
// into later events that carry none. An empty id stops the stamping.
func (w *Writer) SetSessionID(id string) {
	w.mu.Lock()
	w.sessionID = id
	w.mu.Unlock()
}

// Write stamps a copy of ev and publishes it: one line in the log, one entry
// in the history ring, one item for every subscriber. It returns the stamped
// event.
//
// Stamping, per docs/events.md#the-envelope: seq is always assigned (1, 2, 3… per writer);
// ts (Unix ms), run_id, run_label and runtime_id are added only when absent
// and, for the Stamp fields, only when non-empty; session_id is the event's
// own when it is a non-empty string, else the SetSessionID value, and is
// omitted when neither is set.
//
// Lines are written whole, many to a Write call under a flood, so a harness
// tailing the log never sees half of one. A log that fails (a write error,
// or a write blocked past the stall bound) does not stop the history or the
// fan-out: the event is still published. The failure is returned once, by
// the Write that first learns of it, and kept for Err, Flush and Failed;
// the log takes no line after it, since it is incomplete for good.
// An event that cannot be encoded is not published at all and does not use
// a seq.
func (w *Writer) Write(ev Event) (Event, error) {
	if ev.Type() == "" {
		return nil, ErrNoType
	}
	return w.write(clone(ev))
}

// WriteOwned is Write for an event the caller hands over: it is stamped in
// place and published as it is, saving the copy Write makes (under a flood
// every map built per event counts). The caller must not use ev afterwards
// except to read it, even when an error is returned.
func (w *Writer) WriteOwned(ev Event) (Event, error) {
	if ev.Type() == "" {
		return nil, ErrNoType
	}
	return w.write(ev)
}

func (w *Writer) write(out Event) (Event, error) {
	if w.batch != nil {
		// Before the lock: waiting for room must not hold up History,
		// LatestSeq or Subscribe (control) while the log is slow.
		w.batch.waitRoom()
	}
	typ := out.Type()
	if sid, ok := out[KeySessionID]; ok && (sid == nil || sid == "") {
		delete(out, KeySessionID)
	}
	stampIfAbsent(out, KeyRunID, w.stamp.RunID)
	stampIfAbsent(out, KeyRunLabel, w.stamp.RunLabel)
	stampIfAbsent(out, KeyRuntimeID, w.stamp.RuntimeID)

	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, ErrClosed
	}
	stampIfAbsent(out, KeySessionID, w.sessionID)
	if _, ok := out[KeyTS]; !ok {
		out[KeyTS] = w.now().UnixMilli()
	}
	// seq is the writer's own: a seq arriving from a plugin would break the
	// ordering that replay and de-duplication rely on, so it is overwritten.
	seq := w.seq + 1
	out[KeySeq] = seq

	line, err := w.enc.appendLine(w.line[:0], out)
	if err != nil {
		w.mu.Unlock()
		return nil, fmt.Errorf("encode %s event: %w", typ, err)
	}
	kept, offset := w.commitLocked(seq, line, nil)

	for s := range w.subs {
		s.push(seq, out, kept)
	}
	w.mu.Unlock()
	return out, w.settle(typ, seq, offset)
}

// settle ends a write after w.mu is released: an unbatched writer waits
// until the line at offset is in the log, and a failed log is news for the
// run once, here (Err, Flush and Failed keep reporting it).
func (w *Writer) settle(typ sdk.EventType, seq int64, offset int64) error {
	if w.batch == nil {
		return nil
	}
	if !w.batched {
		w.batch.waitWritten(offset)
	}
	if err := w.batch.news(); err != nil {
		return fmt.Errorf("%s event (seq %d): %w", typ, seq, err)
	}
	return nil
}

// maxIdleLine bounds the encode scratch a Writer keeps between writes:
// an ordinary line fits, and the rare bigger event (a long final_output)
// allocates its own rather than pinning its size for the runtime's life.
const maxIdleLine = 64 << 10

// The lines handed to subscribers and callers (Item.Line, Stamped.Line)
// are carved out of small arenas instead of one allocation each: under a
// flood that was one of the last few allocations per event. An arena
// lives while a line in it is referenced (a subscriber's queue), so an
// idle writer keeps only its current one (none once parked or closed). A
// line longer than maxSharedLine gets its own allocation.
const (
	sharedArena   = 4 << 10
	maxSharedLine = 2 << 10
)

// share returns a copy of line that nothing writes to; w.mu is held.
func (w *Writer) share(line []byte) []byte {
	n := len(line)
	if n > maxSharedLine {
		return bytes.Clone(line)
	}
	if cap(w.shared)-len(w.shared) < n {
		w.shared = make([]byte, 0, sharedArena)
	}
	start := len(w.shared)
	w.shared = append(w.shared, line...)
	// Capped, so that appending to a shared line cannot reach its neighbour.
	return w.shared[start:len(w.shared):len(w.shared)]
}

func stampIfAbsent(ev Event, key, value string) {
	if value == "" {
		return
	}
	if _, ok := ev[key]; !ok {
		ev[key] = value
	}
}

// Err returns the log's failure (a write error, or ErrStalled), or nil. It
// stays set: once a line is missing, the log is incomplete for good.
func (w *Writer) Err() error {
	if w.batch == nil {
		return nil
	}
	return w.batch.error()
}

// Failed is closed when the log fails (see Err); the owner of the run ends
// it, since its log can no longer be complete. Without a log it is never
// closed.
func (w *Writer) Failed() <-chan struct{} { return w.failed.Done() }

// AfterFailed arranges for f to run, on a goroutine of its own, once the
// log fails; stop cancels that (true when f will not run), as
// context.AfterFunc. Until then it holds no goroutine: `avenor stable`
// watches every runtime's log, and a goroutine waiting on Failed was one
// more stack per runtime.
func (w *Writer) AfterFailed(f func()) (stop func() bool) { return context.AfterFunc(w.failed, f) }

// Flush waits until every line written before the call is in the log, and
// returns the log's failure (see Err). It returns within the stall bound
// even when a write never returns.
func (w *Writer) Flush() error {
	if w.batch != nil {
		w.batch.flush()
	}
	return w.Err()
}

// LatestSeq returns the seq of the last published event, 0 before the first.
func (w *Writer) LatestSeq() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq
}

// History returns up to limit of the latest events with seq > afterSeq, oldest
// first, from the in-memory ring (limit <= 0: all the ring holds). Taking the
// latest rather than the first keeps a replay contiguous with the live
// events that follow it. Events older than the ring are gone; the NDJSON log
// is the complete record.
func (w *Writer) History(afterSeq int64, limit int) []Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.history.after(afterSeq, limit)
}

// Close ends the stream: later Writes fail with ErrClosed, and every
// subscription delivers what it has queued and then closes its channel.
// History stays readable (its storage fitted to it). It flushes the queued lines first and
// returns the log's failure (bounded like Flush). Close does not close the
// log writer. It is idempotent.
func (w *Writer) Close() error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		for s := range w.subs {
			s.finish()
			delete(w.subs, s)
		}
	}
	w.mu.Unlock()
	err := w.Flush()
	w.mu.Lock()
	w.trimLocked()
	w.mu.Unlock()
	return err
}

// commitLocked makes line (one encoded event and its newline, in the
// writer's scratch) event seq: one copy shared with the subscribers, one
// kept compact in the history ring, the line queued to the log's batch (its
// offset returned), and the scratch kept for the next event unless a big
// event grew it past maxIdleLine. w.mu is held.
func (w *Writer) commitLocked(seq int64, line []byte, spans *cutSpans) (kept []byte, offset int64) {
	w.seq = seq
	kept = w.share(line[:len(line)-1])
	w.history.push(seq, kept, spans)
	if w.batch != nil {
		offset = w.batch.add(line)
	}
	if cap(line) > maxIdleLine {
		line = nil
	}
	w.line = line
	return kept, offset
}

// BoundFinalOutput rewrites the history's events whose final_output is
// longer than runes runes (<= 0: FinalOutputLimit) as Truncate makes them,
// and fits the writer's storage to what it then holds (trimLocked), so a
// writer kept for long — a parked stable runtime's — holds no whole
// answer and no room for traffic in memory; the log keeps it. Every control view (status, history,
// subscriptions) bounds final_output the same way, so what they show does
// not change. Events written later are kept whole until the next call.
func (w *Writer) BoundFinalOutput(runes int) {
	if runes <= 0 {
		runes = FinalOutputLimit
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var enc lineEncoder
	w.history.boundFinalOutput(runes, &enc)
	w.trimLocked()
}

// trimLocked fits the writer's storage to what it holds, for a writer
// that will be idle for long: the history's arena exactly, no shared
// arena, no encode scratch, no batch buffers, and no queue in a
// subscription that has nothing queued. w.mu is held.
func (w *Writer) trimLocked() {
	w.history.trim()
	w.line, w.shared = nil, nil
	if w.batch != nil {
		w.batch.trim()
	}
	for s := range w.subs {
		s.trim()
	}
}
