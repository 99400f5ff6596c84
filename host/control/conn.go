package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"sync"

	"github.com/avenor-go/avenor/host/event"
)

// Conn is one client connection. Its writes are whole lines, serialised, so
// responses and event notifications never interleave.
type Conn struct {
	s      *Server
	nc     *net.UnixConn
	id     uint64
	pid    int // the peer's process (SO_PEERCRED), 0 when unknown
	ctx    context.Context
	cancel context.CancelFunc

	wmu sync.Mutex // one line at a time

	observer bool // called observe; guarded by s.mu

	mu sync.Mutex
	// subs are the subscriptions the connection owns (Forward), each with
	// the last seq sent; finished ones are dropped.
	subs map[*event.Subscription]*forwarded
	// ready is where the subscriptions signal the forwarder; forwarding
	// says its goroutine runs (it ends when no subscription is left).
	ready      *event.Ready
	forwarding bool
	closed     bool
	wg         sync.WaitGroup // the forwarder, Forward calls and concurrent calls
}

func newConn(s *Server, nc *net.UnixConn, id uint64, pid int) *Conn {
	ctx, cancel := context.WithCancel(s.ctx)
	return &Conn{s: s, nc: nc, id: id, pid: pid, ctx: ctx, cancel: cancel}
}

// ID numbers the connection within its server (1, 2, …).
func (c *Conn) ID() uint64 { return c.id }

// Context ends when the connection closes.
func (c *Conn) Context() context.Context { return c.ctx }

// serve reads requests until the peer goes away or the server stops.
func (c *Conn) serve() {
	defer c.s.wg.Done()
	defer c.teardown()
	lr := newLineReader(c.nc, MaxRequestLine, c.s.budget, c.s.mem.released)
	defer lr.close()
	for {
		line, err := lr.read()
		// Past either bound the rest of the line is unread: the
		// connection cannot go on, and its buffer is already given back.
		if errors.Is(err, errLineTooLong) {
			c.write(EncodeError(nil, newError(CodeInvalidRequest, MsgInvalidRequest, "request line exceeds 4 MiB; the connection is closed")))
			return
		}
		if errors.Is(err, errBudget) {
			c.s.log.Warn("closed a control connection: the request lines being read on all connections hold the bound", "conn", c.id, "bound", MaxPendingRequestBytes)
			c.write(EncodeError(nil, &Error{Code: CodeServerError,
				Message: "too much unfinished request data: the control socket's connections hold 64 MiB of request lines not ended yet (control.MaxPendingRequestBytes); the connection is closed, retry"}))
			return
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.s.log.Debug("control connection read failed", "conn", c.id, "error", err)
			}
			return
		}
		if len(bytes.TrimSpace(line)) == 0 { // blank lines are no requests
			continue
		}
		c.handle(line)
	}
}

// handle decodes and dispatches one request line.
func (c *Conn) handle(line []byte) {
	req, rerr := DecodeRequest(line)
	if rerr != nil {
		// Bad requests are always answered (JSON-RPC 2.0 §5), with the id
		// when it could be read.
		c.write(EncodeError(req.ID, rerr))
		return
	}
	m, ok := c.s.method(req.Method)
	if !ok {
		c.reply(req.ID, nil, &Error{Code: CodeMethodNotFound, Message: MsgMethodNotFound}, nil)
		return
	}
	if m.Mutating && !c.s.claim(c) {
		c.reply(req.ID, nil, newError(CodePermissionDenied, MsgPermissionDenied,
			"another control connection owns this runtime; mutation is open again when it disconnects"), nil)
		return
	}
	// The params are copied: line belongs to the reader's buffer.
	call := &Call{Method: req.Method, Params: clone(req.Params), Conn: c}
	id := clone(req.ID)
	run := func() {
		res, err := m.Handler(c.ctx, call)
		if m.Mutating {
			c.s.settle(c, err == nil)
		}
		c.reply(id, res, err, call.afterReply)
	}
	if m.Concurrent {
		c.goOwned(run)
		return
	}
	run()
}

// reply writes the response (none for a notification) then runs the
// after-reply hooks.
func (c *Conn) reply(id json.RawMessage, res any, err error, after []func()) {
	if id != nil {
		if err != nil {
			c.write(EncodeError(id, toRPCError(err)))
		} else if line, merr := EncodeResult(id, res); merr != nil {
			c.s.log.Error("control result could not be encoded", "error", merr)
			c.write(EncodeError(id, &Error{Code: CodeServerError, Message: "result could not be encoded: " + merr.Error()}))
		} else {
			c.write(line)
		}
	}
	if err == nil {
		for _, f := range after {
			f()
		}
	}
}

// write sends one line; it reports false once the connection is unusable.
func (c *Conn) write(line []byte) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(line)
}

// writeLocked is write with c.wmu held.
func (c *Conn) writeLocked(line []byte) bool {
	if _, err := c.nc.Write(line); err != nil {
		c.nc.Close() // the reader sees it and tears the connection down
		return false
	}
	return true
}

// Notify sends one event notification. The event's final_output is bounded
// for control views (docs/events.md#the-envelope). It reports false when the connection
// is gone.
func (c *Conn) Notify(ev event.Event) bool {
	line := c.appendNotification(nil, ev)
	if len(line) == 0 {
		return true
	}
	return c.write(line)
}

// appendNotification appends ev's notification line to dst, or nothing
// (logged) when it cannot be encoded.
func (c *Conn) appendNotification(dst []byte, ev event.Event) []byte {
	out, err := AppendEvent(dst, event.Truncate(ev, event.FinalOutputLimit))
	if err != nil {
		c.s.log.Error("control event could not be encoded", "event", ev.Type(), "error", err)
		return dst
	}
	return out
}

// finalOutputKey marks a line whose event Truncate may change.
var finalOutputKey = []byte(`"final_output":`)

// maxKeptNotifyBuffer bounds the batch buffer a connection keeps between
// batches: a huge event's should not be kept for the connection's life.
const maxKeptNotifyBuffer = 1 << 20

// maxIdleNotifyBatch bounds the item slice the forwarder keeps while it
// waits for events: a trickle's batches reuse it, a burst's is dropped.
const maxIdleNotifyBatch = 16

// notifyFlushAt is the batch size at which the forwarder writes what it
// has encoded before taking the next ready subscription's events: one
// write carries many subscriptions' lines, and a round over many
// subscriptions that all fell behind holds no more than this (plus one
// subscription's queue) at once.
const notifyFlushAt = 64 << 10

// forwarded is one subscription a connection forwards: last is the seq of
// the last event sent, so replay and live events are sent once each. The
// forwarder alone touches it once it is attached.
type forwarded struct {
	sub  *event.Subscription
	last int64
}

// add appends ev's notification unless its seq was already sent.
func (f *forwarded) add(c *Conn, buf []byte, ev event.Event) []byte {
	if seq, ok := SeqOf(ev); ok {
		if seq <= f.last {
			return buf
		}
		f.last = seq
	}
	return c.appendNotification(buf, ev)
}

// appendItems appends the notifications of items not sent yet. Each is
// spliced around the event's line as the log has it, so no event is
// encoded again; only one that may carry a final_output to bound
// (docs/events.md#the-envelope) is.
func (f *forwarded) appendItems(c *Conn, buf []byte, items []event.Item) []byte {
	for _, it := range items {
		line := it.Line()
		if line == nil || bytes.Contains(line, finalOutputKey) {
			buf = f.add(c, buf, it.Event())
			continue
		}
		if seq, _ := it.Seq(); seq <= f.last {
			continue
		}
		f.last, _ = it.Seq()
		buf = appendEventLine(buf, line)
	}
	return buf
}

// Forward sends replay at once, then the subscription's live events,
// skipping every event whose seq is not above the last one sent
// (docs/control-protocol.md#subscribe: replay and live are de-duplicated
// by seq, after_seq skips older events). Sending the replay before
// returning keeps it ahead of the answers to later requests. The
// subscription belongs to the connection from here on: it is closed when
// the connection closes.
//
// The live events of all the connection's subscriptions are sent by one
// goroutine, the first Forward's: a subscriber to every runtime of a
// supervisor costs one goroutine, not one per runtime.
func (c *Conn) Forward(replay []event.Event, sub *event.Subscription, afterSeq int64) {
	f := &forwarded{sub: sub, last: afterSeq}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		sub.Close()
		return
	}
	if c.subs == nil {
		c.subs = map[*event.Subscription]*forwarded{}
	}
	c.subs[sub] = f
	c.wg.Add(1)
	c.mu.Unlock()
	defer c.wg.Done()
	for _, ev := range replay {
		// A failed write closes the connection, and its teardown the
		// subscription.
		if line := f.add(c, nil, ev); len(line) > 0 && !c.write(line) {
			return
		}
	}
	c.attach(sub)
}

// attach hands sub to the forwarder, starting it when none runs.
func (c *Conn) attach(sub *event.Subscription) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return // teardown closes sub
	}
	if c.ready == nil {
		c.ready = event.NewReady()
	}
	if !c.forwarding {
		c.forwarding = true
		c.wg.Add(1)
		go c.forward(c.ready)
	}
	c.ready.Attach(sub)
}

// forward sends the live events of the connection's subscriptions until
// the connection closes or none is left. Each round takes the queue of
// every subscription that became ready once, in the order they did, so a
// runtime flooding its subscription cannot starve the others. Everything
// taken goes out in as few writes as notifyFlushAt allows (whole lines
// only, so responses never interleave): under a flood one system call
// carries a whole batch of lines, which is what lets a subscriber keep up;
// a lone event goes out at once.
func (c *Conn) forward(ready *event.Ready) {
	defer c.wg.Done()
	var (
		marked []*event.Subscription
		round  []*forwarded
		ended  []*forwarded
		items  []event.Item
		buf    []byte // the connection's one batch buffer
	)
	for {
		var ok bool
		marked, ok = ready.Wait(marked[:0])
		if !ok {
			return
		}
		round = c.forwardedOf(marked, round[:0])
		clear(marked)
		ended = ended[:0]
		for _, f := range round {
			var more bool
			items, more = f.sub.TakeItems(items[:0])
			buf = f.appendItems(c, buf, items)
			clear(items) // the events belong to the writer's history
			if cap(items) > maxIdleNotifyBatch {
				items = nil
			}
			if !more {
				ended = append(ended, f)
			}
			if len(buf) >= notifyFlushAt {
				if !c.writeBatch(buf) {
					c.stopForwarding()
					return
				}
				buf = buf[:0]
			}
		}
		clear(round)
		if len(buf) > 0 && !c.writeBatch(buf) {
			c.stopForwarding()
			return
		}
		if cap(buf) > maxKeptNotifyBuffer {
			buf = nil
		}
		buf = buf[:0]
		if len(ended) > 0 && c.dropEnded(ended) {
			return
		}
		clear(ended)
	}
}

// forwardedOf appends the state of each subscription in marked that the
// connection still forwards.
func (c *Conn) forwardedOf(marked []*event.Subscription, dst []*forwarded) []*forwarded {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range marked {
		if f := c.subs[s]; f != nil {
			dst = append(dst, f)
		}
	}
	return dst
}

// writeBatch writes the forwarder's encoded lines; false once the
// connection is unusable.
func (c *Conn) writeBatch(buf []byte) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(buf)
}

// stopForwarding records that the forwarder has ended (its write failed:
// the connection is closing); a later Forward would start another.
func (c *Conn) stopForwarding() {
	c.mu.Lock()
	c.forwarding = false
	c.mu.Unlock()
}

// dropEnded forgets and closes the subscriptions that ended (their runtime
// is gone, or they were closed); it reports whether the forwarder is to
// stop: no subscription is left, and the next Forward starts another.
func (c *Conn) dropEnded(ended []*forwarded) (stop bool) {
	c.mu.Lock()
	for _, f := range ended {
		delete(c.subs, f.sub)
	}
	stop = len(c.subs) == 0
	if stop {
		c.forwarding = false
	}
	c.mu.Unlock()
	for _, f := range ended {
		f.sub.Close()
	}
	return stop
}

// goOwned runs f on a goroutine the connection waits for at teardown.
func (c *Conn) goOwned(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
}

// teardown closes the connection, its subscriptions and goroutines, and
// releases its ownership.
func (c *Conn) teardown() {
	// Ownership goes first: a client that half-closes and waits for our
	// close may mutate from its next connection at once.
	c.s.release(c)
	c.cancel()
	c.nc.Close()
	c.mu.Lock()
	c.closed = true
	subs := c.subs
	c.subs = nil
	ready := c.ready
	c.mu.Unlock()
	if ready != nil {
		ready.Close()
	}
	for s := range subs {
		s.Close()
	}
	c.wg.Wait()
	c.s.dropConn(c)
}

// clone copies b, keeping nil as nil (an absent id stays absent).
func clone(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage{}, b...)
}

// SeqOf reads an event's seq: int64 from a writer, other kinds from
// decoded JSON. false: it carries none (subscriber.lagged).
func SeqOf(ev event.Event) (int64, bool) {
	switch v := ev[event.KeySeq].(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case float64:
		return int64(v), true
	}
	return 0, false
}
