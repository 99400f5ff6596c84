package event

import (
	"sync"
	"sync/atomic"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Subscription receives a Writer's events from the moment it was created.
//
// Each subscription has a bounded queue. When the queue is full, the oldest
// queued event is dropped to make room (docs/control-protocol.md#subscribe), so Write never waits
// for a subscriber. Drops are counted and coalesced: before the first event
// that follows a gap, the subscriber receives one subscriber.lagged event
// with dropped_count, then the live events resume. (Drops that happen while
// the reader is taking a notice can only be reported in a second, adjacent
// notice; the counts add up.) Events are shared with the Writer: read-only.
//
// subscriber.lagged is stamped with ts, run_id, run_label and runtime_id but
// carries no seq: it is per subscriber, it is not in the log or the history,
// and giving it a runtime seq would open a hole in every other consumer's
// sequence. A consumer reconciling by seq simply skips it.
//
// Events are taken either from C (a goroutine, the pump, feeds it one at a
// time) or in batches with Receive (no goroutine), never both; or, for a
// reader of many subscriptions, with TakeItems once a Ready says so.
type Subscription struct {
	w      *Writer
	out    chan Event
	wake   chan struct{} // capacity 1: "the queue changed"
	done   chan struct{} // closed by Close
	exited chan struct{} // closed when the pump returns, or by Close when none ran
	once   sync.Once

	modeMu sync.Mutex
	mode   int // modeNone, modeChannel (C started the pump), modeBatch or modeClosed

	// fan is the Ready this subscription reports to, if any; marked says
	// it is in fan's ready list (guarded by fan.mu).
	fan    atomic.Pointer[Ready]
	marked bool

	mu       sync.Mutex
	after    int64    // live events with seq <= after are not wanted
	queue    []queued // a circle of up to max entries, grown on demand
	max      int
	head, n  int
	items    []Item // Receive's scratch: taken under mu, decoded after
	dropped  int64
	finished bool // the writer closed: deliver the queue, then close out
}

// Subscribe returns a subscription to the events written after this call;
// queue is its capacity (<= 0: DefaultQueue). The caller must Close it.
func (w *Writer) Subscribe(queue int) *Subscription {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.subscribeLocked(w.seq, queue)
}

// SubscribeWithReplay returns, atomically, the replay — up to limit of the
// latest events with seq > afterSeq from the history ring, as History — and a
// subscription that delivers every later event: nothing between the replay
// and the first live event is lost or repeated. Live events with
// seq <= afterSeq (a cursor ahead of this writer) are skipped too.
func (w *Writer) SubscribeWithReplay(afterSeq int64, limit, queue int) ([]Event, *Subscription) {
	w.mu.Lock()
	defer w.mu.Unlock()
	replay := w.history.after(afterSeq, limit)
	return replay, w.subscribeLocked(max(afterSeq, w.seq), queue)
}

func (w *Writer) subscribeLocked(after int64, queue int) *Subscription {
	if queue <= 0 {
		queue = DefaultQueue
	}
	s := &Subscription{
		w:      w,
		out:    make(chan Event),
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
		after:  after,
		max:    queue,
	}
	if w.closed {
		s.finished = true
	} else {
		w.subs[s] = struct{}{}
	}
	return s
}

// Ways a subscription is read (Subscription.mode).
const (
	modeNone = iota
	modeChannel
	modeBatch
	modeClosed // closed before C was called: out and exited are closed
)

// setMode fixes how the subscription is read; it reports whether the pump
// must be started. Mixing C and Receive is a programming error.
func (s *Subscription) setMode(m int) (start bool) {
	s.modeMu.Lock()
	defer s.modeMu.Unlock()
	switch s.mode {
	case m, modeClosed:
		return false
	case modeNone:
		s.mode = m
		return m == modeChannel
	}
	panic("event: a Subscription is read with C or with Receive, not both")
}

// C returns the channel of events. It is closed after Close, or after the
// Writer closed and everything queued was delivered. The first call starts
// the goroutine that feeds it.
func (s *Subscription) C() <-chan Event {
	if s.setMode(modeChannel) {
		go s.pump()
	}
	return s.out
}

// Receive waits for events and returns everything queued at once, appended
// to buf, oldest first: a subscriber.lagged notice first when events were
// dropped since the last call (docs/control-protocol.md#subscribe). It returns false, with nothing
// appended, once the subscription is closed, or once the Writer closed and
// everything queued was returned. A consumer that writes events out (a
// control socket) pays one write per batch instead of one per event. The
// events are shared with the Writer: read-only.
func (s *Subscription) Receive(buf []Event) ([]Event, bool) {
	var more bool
	s.items, more = s.ReceiveItems(s.items[:0])
	for _, it := range s.items {
		buf = append(buf, it.Event())
	}
	clear(s.items)
	if cap(s.items) > queueKeep {
		s.items = nil // a burst's scratch
	}
	return buf, more
}

// Item is one event a subscription delivers, with the line the Writer
// encoded it as.
type Item struct {
	q   queued
	lag Event // a subscriber.lagged notice
}

// Event returns the event (decoding a plugin event's line the first time
// any subscriber asks). Shared with the Writer: read-only.
func (it Item) Event() Event {
	if it.lag != nil {
		return it.lag
	}
	return it.q.event()
}

// Line returns the event's NDJSON line without the newline, as in the log,
// or nil for a subscriber.lagged notice (which is in no log). Shared:
// read-only. A consumer that writes events out uses it instead of
// encoding the event again.
func (it Item) Line() []byte {
	if it.lag != nil {
		return nil
	}
	if it.q.raw != nil {
		return it.q.raw.line
	}
	return it.q.line
}

// Seq returns the event's seq; false for a subscriber.lagged notice.
func (it Item) Seq() (int64, bool) {
	if it.lag != nil {
		return 0, false
	}
	if it.q.raw != nil {
		return it.q.raw.seq, true
	}
	return it.q.seq, true
}

// Type returns the event's type without decoding it.
func (it Item) Type() sdk.EventType {
	if it.lag != nil {
		return TypeSubscriberLagged
	}
	if it.q.raw != nil {
		return it.q.raw.typ
	}
	return it.q.ev.Type()
}

// ReceiveItems is Receive for a consumer that wants the events' lines: it
// appends Items instead of events, and decodes nothing itself.
func (s *Subscription) ReceiveItems(buf []Item) ([]Item, bool) {
	s.setMode(modeBatch)
	for {
		select {
		case <-s.done:
			return buf, false
		default:
		}
		n := len(buf)
		buf, finished := s.take(buf)
		if len(buf) > n {
			return buf, true
		}
		if finished {
			return buf, false
		}
		select {
		case <-s.wake:
		case <-s.done:
			return buf, false
		}
	}
}

// TakeItems is ReceiveItems without the wait, for the reader of a Ready the
// subscription is attached to: it appends what is queued now (a
// subscriber.lagged notice first), possibly nothing. It returns false once
// nothing more will come: the subscription is closed (nothing appended),
// or the Writer closed and what it appended was the last — unlike
// ReceiveItems, which says so one call later, since no further mark would
// come to make the reader call again. The subscription then leaves its
// Ready.
func (s *Subscription) TakeItems(buf []Item) ([]Item, bool) {
	s.setMode(modeBatch)
	select {
	case <-s.done:
		s.leaveReady()
		return buf, false
	default:
	}
	buf, finished := s.take(buf)
	if finished {
		s.leaveReady()
		return buf, false
	}
	return buf, true
}

// take appends everything queued, a lag notice first when events were
// dropped since the last take; finished: the Writer closed, so nothing
// will follow what it appended.
func (s *Subscription) take(buf []Item) ([]Item, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropped > 0 {
		buf = append(buf, Item{lag: s.w.lagged(s.dropped)})
		s.dropped = 0
	}
	for ; s.n > 0; s.n-- {
		buf = append(buf, Item{q: s.queue[s.head]})
		s.queue[s.head] = queued{}
		s.head = (s.head + 1) % len(s.queue)
	}
	s.shrinkLocked()
	return buf, s.finished
}

// leaveReady detaches s from its Ready, if any.
func (s *Subscription) leaveReady() {
	if r := s.fan.Load(); r != nil {
		r.detach(s)
	}
}

// Close ends the subscription and waits for its goroutine, if C started
// one, to stop; queued events are discarded and C is closed. It is
// idempotent and safe to call while another goroutine reads C, waits in
// Receive or takes the subscription from a Ready.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.w.mu.Lock()
		delete(s.w.subs, s)
		s.w.mu.Unlock()
		close(s.done)
		// A Ready's reader learns of the close from TakeItems.
		if r := s.fan.Load(); r != nil {
			r.mark(s)
		}
		s.modeMu.Lock()
		if s.mode != modeChannel {
			// No pump ran or will run: C, if ever called, gets a closed
			// channel.
			s.mode = modeClosed
			close(s.out)
			close(s.exited)
		}
		s.modeMu.Unlock()
	})
	<-s.exited
}

// push queues ev, dropping the oldest queued event when full. Called with
// Writer.mu held, so pushes arrive in seq order; it never blocks.
func (s *Subscription) push(seq int64, ev Event, line []byte) {
	s.pushItem(seq, queued{ev: ev, line: line, seq: seq})
}

// pushRaw queues a plugin event published as its line (WriteFields).
func (s *Subscription) pushRaw(seq int64, r *rawEvent) { s.pushItem(seq, queued{raw: r}) }

func (s *Subscription) pushItem(seq int64, q queued) {
	s.mu.Lock()
	if s.finished || seq <= s.after {
		s.mu.Unlock()
		return
	}
	if s.n == len(s.queue) && s.n < s.max {
		s.growLocked()
	}
	size := len(s.queue)
	if s.n == size {
		s.queue[s.head] = queued{}
		s.head = (s.head + 1) % size
		s.n--
		s.dropped++
	}
	s.queue[(s.head+s.n)%size] = q
	s.n++
	s.mu.Unlock()
	s.signal()
}

// Growth of a subscription's queue.
const (
	// minQueue is the first queue a subscription allocates.
	minQueue = 4
	// queueKeep is the largest queue a drained subscription keeps: a
	// trickle of events reuses it, and a burst's queue (up to the
	// subscription's whole bound) is given back once read.
	queueKeep = 16
)

// growLocked doubles the full queue, up to s.max, oldest first from 0.
func (s *Subscription) growLocked() {
	grown := make([]queued, min(s.max, max(minQueue, 2*len(s.queue))))
	k := copy(grown, s.queue[s.head:])
	copy(grown[k:], s.queue[:s.head])
	s.queue, s.head = grown, 0
}

// trim gives back the queue when nothing is queued; called with
// Writer.mu held, for a writer that will be idle for long.
func (s *Subscription) trim() {
	s.mu.Lock()
	if s.n == 0 {
		s.queue, s.head = nil, 0
	}
	s.mu.Unlock()
}

// shrinkLocked gives back an empty queue grown past queueKeep.
func (s *Subscription) shrinkLocked() {
	if s.n == 0 && len(s.queue) > queueKeep {
		s.queue, s.head = nil, 0
	}
}

// finish marks the end of the stream; called with Writer.mu held.
func (s *Subscription) finish() {
	s.mu.Lock()
	s.finished = true
	s.mu.Unlock()
	s.signal()
}

// signal wakes the reader: the one waiting in Receive or the pump, or the
// reader of the Ready the subscription is attached to.
func (s *Subscription) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
	if r := s.fan.Load(); r != nil {
		r.mark(s)
	}
}

// next takes the item to deliver: a lag notice when events were dropped
// since the last delivery, else the oldest queued event.
func (s *Subscription) next() (ev Event, dropped int64, ok, finished bool) {
	s.mu.Lock()
	if s.dropped > 0 {
		dropped, s.dropped = s.dropped, 0
		s.mu.Unlock()
		return s.w.lagged(dropped), dropped, true, false
	}
	if s.n > 0 {
		q := s.queue[s.head]
		s.queue[s.head] = queued{}
		s.head = (s.head + 1) % len(s.queue)
		s.n--
		s.shrinkLocked()
		s.mu.Unlock()
		return q.event(), 0, true, false
	}
	finished = s.finished
	s.mu.Unlock()
	return nil, 0, false, finished
}

// takeDropped returns and clears the drop count.
func (s *Subscription) takeDropped() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.dropped
	s.dropped = 0
	return n
}

// pump moves events from the queue to the unbuffered channel. The queue, not
// the channel, holds the backlog, so dropping the oldest event and putting
// the lag notice in front of the survivors are both possible.
func (s *Subscription) pump() {
	defer close(s.exited)
	defer close(s.out)
	for {
		ev, dropped, ok, finished := s.next()
		if finished {
			return
		}
		if !ok {
			select {
			case <-s.wake:
				continue
			case <-s.done:
				return
			}
		}
		if !s.deliver(ev, dropped) {
			return
		}
	}
}

// deliver hands ev to the reader, or reports false when the subscription is
// closed first. While a lag notice (dropped > 0) waits for the reader, later
// drops are merged into it, so one gap gives one notice; a notice is rebuilt
// rather than changed because a sent map belongs to the reader.
func (s *Subscription) deliver(ev Event, dropped int64) bool {
	for {
		select {
		case s.out <- ev:
			return true
		case <-s.wake:
			// For a real event, the queue change is seen after delivery.
			if dropped > 0 {
				if more := s.takeDropped(); more > 0 {
					dropped += more
					ev = s.w.lagged(dropped)
				}
			}
		case <-s.done:
			return false
		}
	}
}

// lagged builds the subscriber.lagged notice. It reads only immutable
// Writer fields, so it needs no Writer lock (push holds it while taking the
// subscription's lock; taking them in the other order would deadlock).
func (w *Writer) lagged(dropped int64) Event {
	ev := Event{
		KeyEvent:        string(TypeSubscriberLagged),
		"dropped_count": dropped,
		KeyTS:           w.now().UnixMilli(),
	}
	stampIfAbsent(ev, KeyRunID, w.stamp.RunID)
	stampIfAbsent(ev, KeyRunLabel, w.stamp.RunLabel)
	stampIfAbsent(ev, KeyRuntimeID, w.stamp.RuntimeID)
	return ev
}

// queued is one event in a subscription's queue: an event map, or a plugin
// event published as its line and decoded when a reader first takes it.
type queued struct {
	ev   Event
	line []byte // ev's line (no newline), shared with the history ring
	seq  int64
	raw  *rawEvent
}

func (q queued) event() Event {
	if q.raw != nil {
		return q.raw.event()
	}
	return q.ev
}

// rawEvent is a plugin event WriteFields published: its line, decoded once
// for all the subscribers that read it.
type rawEvent struct {
	rawDesc
	once sync.Once
	ev   Event
}

// rawDesc is what decoding a rawEvent takes.
type rawDesc struct {
	line []byte
	seq  int64
	// What the Writer stamped, in the Go values Write would have put in
	// the map: the line holds them encoded, and a string that is not
	// valid UTF-8 would not decode back to itself.
	typ       sdk.EventType
	stamp     *Stamp
	sessionID string // stamped session_id, "" when none was
	stampedTS bool
	stamped   uint8 // stampedRunID | stampedRunLabel | stampedRuntimeID
}

const (
	stampedRunID = 1 << iota
	stampedRunLabel
	stampedRuntimeID
)

// newRaw returns the event d describes, not yet decoded.
func (d rawDesc) newRaw() *rawEvent { return &rawEvent{rawDesc: d} }

// event returns the event as Write would have published it: the plugin's
// fields as decoded from JSON (numbers float64), the stamped fields as
// Write sets them (seq and ts int64).
func (r *rawEvent) event() Event {
	r.once.Do(func() {
		ev, err := decodeCanonical(r.line)
		if err != nil {
			// Cannot happen: the line is the Writer's own encoding.
			ev = Event{"message": "event line unreadable"}
		}
		ev[KeyEvent] = string(r.typ)
		ev[KeySeq] = r.seq
		if f, ok := ev[KeyTS].(float64); ok && r.stampedTS {
			ev[KeyTS] = int64(f)
		}
		if r.sessionID != "" {
			ev[KeySessionID] = r.sessionID
		}
		if r.stamped&stampedRunID != 0 {
			ev[KeyRunID] = r.stamp.RunID
		}
		if r.stamped&stampedRunLabel != 0 {
			ev[KeyRunLabel] = r.stamp.RunLabel
		}
		if r.stamped&stampedRuntimeID != 0 {
			ev[KeyRuntimeID] = r.stamp.RuntimeID
		}
		r.ev = ev
	})
	return r.ev
}
