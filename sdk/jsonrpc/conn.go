package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Handler serves what the agent sends. Its methods are called from one
// goroutine, strictly in the order the messages arrived, so a handler that
// emits events keeps them in stream order; a request handler may block (a
// permission request waits for the host's broker) and later messages wait
// for it. Responses to our own requests wait behind the messages that came
// before them too, so when a call returns, every update the agent sent
// before its answer has been handled.
type Handler interface {
	// HandleRequest answers one agent→client request: a result to marshal,
	// or an error. ctx is cancelled when the agent withdraws the request
	// ($/cancel_request; context.Cause is ErrWithdrawn) or the connection
	// is closed.
	HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, *RPCError)
	// HandleNotification takes one agent→client notification.
	HandleNotification(method string, params json.RawMessage)
}

// ConnOptions configures a Conn. The zero value is usable.
type ConnOptions struct {
	// Logger receives diagnostics; nil discards them.
	Logger hclog.Logger
	// MaxFrame bounds a Content-Length framed message; <= 0 means
	// agentproc.DefaultMaxLineBytes. Lines are bounded by the LineSource.
	MaxFrame int
	// OnFrameError is called (from the reading goroutine) for every frame
	// that could not be used: not JSON, over-long, malformed header.
	OnFrameError func(error)
	// WriteTimeout bounds one write to the agent when the writer supports
	// deadlines (a pipe does); <= 0 means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// QueueSize bounds the messages read ahead of the handler; when it is
	// full, reading stops (the agent's writes then block). <= 0 means
	// DefaultQueueSize.
	QueueSize int
}

// Defaults of ConnOptions.
const (
	DefaultWriteTimeout = 30 * time.Second
	DefaultQueueSize    = 1024
)

// Stats counts what a Conn has read.
type Stats struct {
	Messages  int64 // usable messages
	BadFrames int64 // frames dropped: not JSON, over-long, malformed
}

// Conn is a JSON-RPC 2.0 connection to an agent over its stdio. It reads in
// one goroutine and hands messages to the Handler in another; both end
// when the LineSource ends. Its methods are safe for concurrent use.
type Conn struct {
	dec     *Decoder
	w       io.Writer
	h       Handler
	log     hclog.Logger
	onFrame func(error)
	wtime   time.Duration

	queue   chan *Message
	base    context.Context // of request handlers
	cancel  context.CancelFunc
	closing chan struct{}
	done    chan struct{} // the dispatcher ended: nothing more will be handled
	readEnd chan struct{}

	wmu sync.Mutex

	mu        sync.Mutex
	nextID    int64
	pending   map[string]*Call
	inflight  map[string]inflight
	readErr   error
	ended     bool // the dispatcher failed the pending calls: no more can be made
	closeOnce sync.Once

	messages, badFrames atomic.Int64
}

// NewConn starts a connection reading src and writing to w.
func NewConn(src LineSource, w io.Writer, h Handler, opts ConnOptions) *Conn {
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	wt := opts.WriteTimeout
	if wt <= 0 {
		wt = DefaultWriteTimeout
	}
	qs := opts.QueueSize
	if qs <= 0 {
		qs = DefaultQueueSize
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{
		dec: NewDecoder(src, opts.MaxFrame), w: w, h: h, log: log, onFrame: opts.OnFrameError, wtime: wt,
		queue: make(chan *Message, qs), base: ctx, cancel: cancel, closing: make(chan struct{}),
		done: make(chan struct{}), readEnd: make(chan struct{}),
		nextID: 1, pending: map[string]*Call{}, inflight: map[string]inflight{},
	}
	go c.read()
	go c.dispatch()
	return c
}

// Done is closed once the agent's output has ended and every message read
// has been handled.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why reading ended (io.EOF when the agent closed its output); nil
// while it goes on.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr
}

// Stats returns the counters so far.
func (c *Conn) Stats() Stats {
	return Stats{Messages: c.messages.Load(), BadFrames: c.badFrames.Load()}
}

// Close cancels the handlers in flight and stops handling messages still
// queued; reading ends only when the LineSource ends (stop the agent).
func (c *Conn) Close() {
	c.closeOnce.Do(func() {
		close(c.closing)
		c.cancel()
	})
}

func (c *Conn) read() {
	defer close(c.readEnd)
	defer close(c.queue)
	for {
		m, err := c.dec.Next()
		if err != nil {
			var fe *FrameError
			if errors.As(err, &fe) {
				c.badFrames.Add(1)
				c.log.Debug("unusable frame from the agent", "error", err)
				if c.onFrame != nil {
					c.onFrame(err)
				}
				continue
			}
			c.mu.Lock()
			c.readErr = err
			c.mu.Unlock()
			return
		}
		c.messages.Add(1)
		switch {
		case m.Method == "$/cancel_request" && !m.HasID():
			c.withdraw(m.Params)
			continue
		case m.Method != "" && m.HasID():
			// Registered before it is queued, so that the agent can
			// withdraw it while it waits behind other messages.
			ctx, cancel := context.WithCancelCause(context.WithValue(c.base, requestIDKey{}, m.ID))
			c.mu.Lock()
			c.inflight[idKey(m.ID)] = inflight{ctx, cancel}
			c.mu.Unlock()
		}
		select {
		case c.queue <- m:
		case <-c.closing:
			c.answerClosed(m)
		}
	}
}

// withdraw cancels the handler of an agent request ($/cancel_request).
func (c *Conn) withdraw(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || p.RequestID == nil {
		return
	}
	c.mu.Lock()
	in, ok := c.inflight[idKey(p.RequestID)]
	c.mu.Unlock()
	if ok {
		in.cancel(ErrWithdrawn)
	}
}

func (c *Conn) dispatch() {
	defer close(c.done)
	for m := range c.queue {
		select {
		case <-c.closing:
			if !m.IsResponse() {
				c.answerClosed(m)
				continue
			}
		default:
		}
		switch {
		case m.IsResponse():
			c.deliver(m)
		case m.HasID():
			c.serve(m)
		default:
			c.notify(m)
		}
	}
	c.mu.Lock()
	cause := c.readErr
	pending := c.pending
	c.pending = map[string]*Call{}
	c.ended = true
	c.mu.Unlock()
	err := ErrClosed
	if cause != nil && !errors.Is(cause, io.EOF) {
		err = fmt.Errorf("%w: %v", ErrClosed, cause)
	}
	for _, call := range pending {
		call.finish(nil, err)
	}
}

// answerClosed says no to a request that arrived after Close, so the agent
// is never left waiting.
func (c *Conn) answerClosed(m *Message) {
	if m.HasID() {
		c.takeInflight(m.ID).cancel(nil)
		c.respond(m.ID, nil, &RPCError{Code: CodeRequestCancelled, Message: "avenor is closing the session"})
	}
}

// inflight is an agent request read and not yet answered.
type inflight struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// takeInflight removes a request's entry, returning it (or a fresh one if
// it had none, which read never allows).
func (c *Conn) takeInflight(id json.RawMessage) inflight {
	key := idKey(id)
	c.mu.Lock()
	in, ok := c.inflight[key]
	delete(c.inflight, key)
	c.mu.Unlock()
	if !ok {
		ctx, cancel := context.WithCancelCause(context.WithValue(c.base, requestIDKey{}, id))
		in = inflight{ctx, cancel}
	}
	return in
}

func (c *Conn) deliver(m *Message) {
	key := idKey(m.ID)
	c.mu.Lock()
	call := c.pending[key]
	delete(c.pending, key)
	c.mu.Unlock()
	if call == nil {
		c.log.Debug("response to no pending request", "id", string(m.ID))
		return
	}
	if call.before != nil {
		call.before()
	}
	if m.Error != nil {
		call.finish(nil, m.Error)
		return
	}
	call.finish(m.Result, nil)
}

func (c *Conn) serve(m *Message) {
	key := idKey(m.ID)
	c.mu.Lock()
	in, ok := c.inflight[key]
	c.mu.Unlock()
	if !ok {
		in = c.takeInflight(m.ID)
	}
	result, rerr := c.safeRequest(in.ctx, m)
	c.takeInflight(m.ID).cancel(nil)
	in.cancel(nil)
	c.respond(m.ID, result, rerr)
}

func (c *Conn) safeRequest(ctx context.Context, m *Message) (result any, rerr *RPCError) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("panic handling an agent request", "method", m.Method, "panic", r, "stack", string(debug.Stack()))
			result, rerr = nil, &RPCError{Code: CodeInternalError, Message: "avenor failed to handle " + m.Method}
		}
	}()
	return c.h.HandleRequest(ctx, m.Method, m.Params)
}

func (c *Conn) notify(m *Message) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("panic handling an agent notification", "method", m.Method, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	c.h.HandleNotification(m.Method, m.Params)
}

func (c *Conn) respond(id json.RawMessage, result any, rerr *RPCError) {
	msg := &Message{ID: id}
	if rerr != nil {
		msg.Error = rerr
	} else {
		b, err := json.Marshal(result)
		if err != nil {
			msg.Error = &RPCError{Code: CodeInternalError, Message: "avenor could not encode its answer: " + err.Error()}
		} else {
			msg.Result = b
		}
	}
	if err := c.write(msg); err != nil {
		c.log.Debug("answering the agent failed", "id", string(id), "error", err)
	}
}

func (c *Conn) write(m *Message) error {
	b, err := encode(m)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if d, ok := c.w.(interface{ SetWriteDeadline(time.Time) error }); ok {
		if d.SetWriteDeadline(time.Now().Add(c.wtime)) == nil {
			defer d.SetWriteDeadline(time.Time{})
		}
	}
	if _, err := c.w.Write(b); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("acp: the agent has not read its input for %s: %w", c.wtime, err)
		}
		return fmt.Errorf("acp: writing to the agent: %w", err)
	}
	return nil
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	raw, err := marshalParams(params)
	if err != nil {
		return err
	}
	return c.write(&Message{Method: method, Params: raw})
}

// Call is one request of ours in flight.
type Call struct {
	Method string
	c      *Conn
	before func() // run by the dispatcher as the answer is delivered
	key    string
	done   chan struct{}
	once   sync.Once
	result json.RawMessage
	err    error
}

func (call *Call) finish(result json.RawMessage, err error) {
	call.once.Do(func() {
		call.result, call.err = result, err
		close(call.done)
	})
}

// Done is closed when the answer (or a failure) is in.
func (call *Call) Done() <-chan struct{} { return call.done }

// Result decodes the answer into out (nil: discard it). It returns the
// agent's *RPCError, an error wrapping ErrClosed, or a decoding error. Call
// it after Done.
func (call *Call) Result(out any) error {
	<-call.done
	if call.err != nil {
		return call.err
	}
	if out == nil || len(call.result) == 0 {
		return nil
	}
	if err := json.Unmarshal(call.result, out); err != nil {
		return fmt.Errorf("acp: decoding the answer to %s: %w", call.Method, err)
	}
	return nil
}

// Raw is the answer's raw result, after Done.
func (call *Call) Raw() json.RawMessage { <-call.done; return call.result }

// Abandon stops waiting; an answer that comes later is dropped.
func (call *Call) Abandon(err error) {
	call.c.mu.Lock()
	delete(call.c.pending, call.key)
	call.c.mu.Unlock()
	call.finish(nil, err)
}

// Go sends a request and returns at once.
func (c *Conn) Go(method string, params any) *Call { return c.GoWith(method, params, nil) }

// GoWith is Go with a hook that runs in the handler goroutine as the answer
// is delivered: after every message the agent sent before the answer was
// handled, before any message sent after it.
func (c *Conn) GoWith(method string, params any, before func()) *Call {
	call := &Call{Method: method, c: c, done: make(chan struct{}), before: before}
	raw, err := marshalParams(params)
	if err != nil {
		call.finish(nil, err)
		return call
	}
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		call.finish(nil, ErrClosed)
		return call
	}
	id := c.nextID
	c.nextID++
	idRaw := json.RawMessage(fmt.Sprint(id))
	call.key = idKey(idRaw)
	c.pending[call.key] = call
	c.mu.Unlock()
	if err := c.write(&Message{ID: idRaw, Method: method, Params: raw}); err != nil {
		call.Abandon(err)
	}
	return call
}

// Call sends a request and waits for its answer, decoded into result (nil:
// discard), until ctx is done.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	call := c.Go(method, params)
	select {
	case <-call.Done():
	case <-ctx.Done():
		call.Abandon(fmt.Errorf("acp: no answer to %s: %w", method, context.Cause(ctx)))
	}
	return call.Result(result)
}

func marshalParams(params any) (json.RawMessage, error) {
	if params == nil {
		return nil, nil
	}
	if raw, ok := params.(json.RawMessage); ok {
		return raw, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("acp: encoding params: %w", err)
	}
	return b, nil
}

// RequestID is the JSON-RPC id of the agent request a handler serves (nil
// outside a request handler).
func RequestID(ctx context.Context) json.RawMessage {
	id, _ := ctx.Value(requestIDKey{}).(json.RawMessage)
	return id
}

type requestIDKey struct{}
