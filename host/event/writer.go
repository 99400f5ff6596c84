package event

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Defaults for Options and Subscribe (contract §5.7: per-runtime history
// window and per-subscriber queue are both 256 events).
const (
	DefaultHistory = 256
	DefaultQueue   = 256
)

// Errors returned by Writer.Write.
var (
	// ErrNoType: the event has no string "event" key, so no consumer could
	// classify it. The fault is the emitter's.
	ErrNoType = errors.New(`event: missing "event" type`)
	// ErrClosed: the writer was closed (the runtime ended).
	ErrClosed = errors.New("event: writer closed")
)

// Stamp holds the envelope fields a Writer adds to every event that lacks
// them (contract §2.1).
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
	// Batched hands the log lines to a goroutine that writes them in
	// batches: Write returns once the line is queued, history and
	// subscribers get the event at once, and a line reaches the log a
	// moment later — at once when nothing else is queued, together with
	// the lines queued behind it under a flood. The caller must Flush (or
	// Close) before anything that says the log is complete, such as the
	// sentinel file, and before the process exits. A log write error then
	// surfaces through Flush and Err, and once through a later Write.
	// Default false: every Write writes its own line before it returns.
	Batched bool
}

// Writer stamps events, appends them to the NDJSON log, remembers the latest
// ones and fans them out to subscribers. One Writer serves one runtime; it is
// safe for concurrent use, and the order of seq is the order of lines in the
// log and the order every subscriber sees.
type Writer struct {
	out   io.Writer
	stamp Stamp
	now   func() time.Time

	mu        sync.Mutex
	seq       int64
	sessionID string
	line      []byte // the line being encoded
	enc       lineEncoder
	history   ring
	subs      map[*Subscription]struct{}
	err       error
	closed    bool

	batch *batcher // Options.Batched; nil: each Write writes its line
}

// NewWriter returns a Writer appending to out; a nil out discards the lines
// (no --on-event) while history and subscribers still work. The Writer never
// closes out.
func NewWriter(out io.Writer, stamp Stamp, opts Options) *Writer {
	w := &Writer{
		out:   out,
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
	if opts.Batched && out != nil {
		w.batch = newBatcher(out)
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
// Stamping, per contract §2.1: seq is always assigned (1, 2, 3… per writer);
// ts (Unix ms), run_id, run_label and runtime_id are added only when absent
// and, for the Stamp fields, only when non-empty; session_id is the event's
// own when it is a non-empty string, else the SetSessionID value, and is
// omitted when neither is set.
//
// The line is written with a single Write call (batched: whole lines only)
// so a harness tailing the log never sees half of it. A failed log write
// does not stop the history or the fan-out: the event is still published
// and the error is returned (batched: once, by a later Write, and by every
// Flush) and kept for Err.
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
	typ := out.Type()
	if sid, ok := out[KeySessionID]; ok && (sid == nil || sid == "") {
		delete(out, KeySessionID)
	}
	stampIfAbsent(out, KeyRunID, w.stamp.RunID)
	stampIfAbsent(out, KeyRunLabel, w.stamp.RunLabel)
	stampIfAbsent(out, KeyRuntimeID, w.stamp.RuntimeID)

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
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
		return nil, fmt.Errorf("encode %s event: %w", typ, err)
	}
	w.seq = seq
	w.history.push(seq, line)

	var werr error
	switch {
	case w.batch != nil:
		w.batch.add(line)
		// A failed batch is news for the run's log once, here; Flush and
		// Err keep reporting it.
		werr = w.batch.news()
	case w.out != nil:
		if _, err := w.out.Write(line); err != nil {
			werr = fmt.Errorf("write %s event (seq %d) to event log: %w", typ, seq, err)
			if w.err == nil {
				w.err = werr
			}
		}
	}
	if cap(line) > maxKeptBuffer {
		// One huge final_output should not pin its buffer for the run.
		line = nil
	}
	w.line = line

	for s := range w.subs {
		s.push(seq, out)
	}
	return out, werr
}

// maxKeptBuffer bounds the encode buffer kept between writes.
const maxKeptBuffer = 1 << 20

func stampIfAbsent(ev Event, key, value string) {
	if value == "" {
		return
	}
	if _, ok := ev[key]; !ok {
		ev[key] = value
	}
}

// Err returns the first error writing to the log, or nil. It stays set: once
// a line is missing, the log is incomplete for good.
func (w *Writer) Err() error {
	w.mu.Lock()
	err := w.err
	w.mu.Unlock()
	if err == nil && w.batch != nil {
		err = w.batch.error()
	}
	return err
}

// Flush waits until every line written before the call is in the log, and
// returns the first log write error (see Err). Without Options.Batched the
// lines are already there and it only reports Err.
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
// History stays readable. A batched Writer flushes its lines first and
// returns the first log write error. Close does not close the log writer.
// It is idempotent.
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
	if w.batch != nil {
		w.batch.flush()
		return w.batch.error()
	}
	return nil
}
