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
	// notifyBuf is where a forwarder encodes its batch, under wmu: one
	// buffer per connection, not one per runtime it follows (with a
	// subscriber to every runtime falling behind, each of 200 forwarders
	// held an encoded batch while it waited for the socket).
	notifyBuf []byte

	observer bool // called observe; guarded by s.mu

	mu     sync.Mutex
	subs   []*event.Subscription
	closed bool
	wg     sync.WaitGroup // forwarders and concurrent calls
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

// maxIdleNotifyBatch bounds the item slice a forwarder keeps while it
// waits for events: a trickle's batches reuse it, a burst's is dropped.
const maxIdleNotifyBatch = 16

// Forward sends replay at once, then the subscription's live events from a
// goroutine, skipping every event whose seq is not above the last one sent
// (docs/control-protocol.md#subscribe: replay and live are de-duplicated by seq, after_seq skips
// older events). Sending the replay before returning keeps it ahead of the
// answers to later requests. The subscription belongs to the connection
// from here on: it is closed when the connection closes.
func (c *Conn) Forward(replay []event.Event, sub *event.Subscription, afterSeq int64) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		sub.Close()
		return
	}
	c.subs = append(c.subs, sub)
	c.wg.Add(1)
	c.mu.Unlock()
	last := afterSeq
	// add appends ev's line unless its seq was already sent.
	add := func(buf []byte, ev event.Event) []byte {
		if seq, ok := SeqOf(ev); ok {
			if seq <= last {
				return buf
			}
			last = seq
		}
		return c.appendNotification(buf, ev)
	}
	for _, ev := range replay {
		if line := add(nil, ev); len(line) > 0 && !c.write(line) {
			c.wg.Done()
			return
		}
	}
	go func() {
		defer c.wg.Done()
		// Everything queued is taken at once and sent in one write: under a
		// flood one system call carries a whole batch of lines (whole lines
		// only, so responses never interleave), which is what lets a
		// subscriber keep up. A lone event goes out at once.
		// The notification is spliced around each event's line as the
		// log has it, so no event is encoded again; only one
		// that may carry a final_output to bound (docs/events.md#the-envelope) is.
		var batch []event.Item
		for {
			var more bool
			batch, more = sub.ReceiveItems(batch[:0])
			// Encoded into the connection's one buffer, under its write
			// lock: a forwarder waiting for the socket holds no lines of
			// its own, and one waiting for events holds none at all.
			c.wmu.Lock()
			buf := c.notifyBuf[:0]
			for _, it := range batch {
				line := it.Line()
				if line == nil || bytes.Contains(line, finalOutputKey) {
					buf = add(buf, it.Event())
					continue
				}
				if seq, _ := it.Seq(); seq <= last {
					continue
				}
				last, _ = it.Seq()
				buf = appendEventLine(buf, line)
			}
			clear(batch) // the events belong to the writer's history
			if cap(batch) > maxIdleNotifyBatch {
				batch = nil
			}
			ok := len(buf) == 0 || c.writeLocked(buf)
			if cap(buf) > maxKeptNotifyBuffer {
				buf = nil
			}
			c.notifyBuf = buf[:0]
			c.wmu.Unlock()
			if !ok || !more {
				return
			}
		}
	}()
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
	c.mu.Unlock()
	for _, s := range subs {
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
