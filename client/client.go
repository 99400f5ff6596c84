package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/avenor-go/avenor/sdk/jsonrpc"
)

// JSON-RPC error codes of docs/control-protocol.md#errors: JSON-RPC 2.0's own (sdk/jsonrpc's),
// then avenor's.
const (
	CodeParseError          = jsonrpc.CodeParseError
	CodeInvalidRequest      = jsonrpc.CodeInvalidRequest
	CodeMethodNotFound      = jsonrpc.CodeMethodNotFound
	CodeInvalidParams       = jsonrpc.CodeInvalidParams
	CodeServerError         = -32000
	CodeNoPendingPermission = -32001
	CodePermissionDenied    = -32010
	CodePromptUnsupported   = -32020
)

// Errors of the client.
var (
	// ErrClosed: the connection is closed (by Close or by the server).
	ErrClosed = errors.New("control connection closed")
	// ErrSubscribed: a Client carries one subscription; dial again for
	// another.
	ErrSubscribed = errors.New("this control connection is already subscribed; dial another for a second subscription")
)

// maxLine bounds one line from the server. Events carry final_output of at
// most 4096 runes, so this is generous.
const maxLine = 64 << 20

// RPCError is an error answered by the server: sdk/jsonrpc's error object,
// with the control protocol's text (its data's detail or required params).
type RPCError jsonrpc.RPCError

func (e *RPCError) Error() string {
	var d struct {
		Detail   string   `json:"detail"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(e.Data, &d)
	switch {
	case d.Detail != "":
		return fmt.Sprintf("%s (%d): %s", e.Message, e.Code, d.Detail)
	case len(d.Required) > 0:
		return fmt.Sprintf("%s (%d): required %v", e.Message, e.Code, d.Required)
	}
	return fmt.Sprintf("%s (%d)", e.Message, e.Code)
}

// Client is one connection to a control socket. It is safe for concurrent
// use.
type Client struct {
	nc      net.Conn
	wmu     sync.Mutex
	done    chan struct{} // closed when the reader stops
	readErr error

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan reply
	sub     *Subscription
	closed  bool
	// refusal is an error the server sent without an id (a control
	// socket over its connection cap sends one, then closes): the reason
	// the connection ended.
	refusal *RPCError
}

type reply struct {
	result json.RawMessage
	err    error
}

// Dial connects to the control socket at path; an empty path is the
// default socket (DialDefault: AVENOR_SOCKET, else
// ~/.avenor/sockets/default.sock). Before anything is sent it checks who is
// at the other end: the socket file must belong to this user and the
// process serving it (SO_PEERCRED) must run as this user, or as root when
// AVENOR_CONTROL_TRUST_ROOT=1 (EnvTrustRoot). Otherwise another user may
// have created the path first, in a shared directory like /tmp, to read
// prompts and forge answers: the error wraps ErrUntrustedSocket and names
// the owner. Every avenor command that talks to a control socket dials
// through here.
func Dial(ctx context.Context, path string) (*Client, error) {
	if path == "" {
		return DialDefault(ctx)
	}
	return dialTrusting(ctx, path, defaultTrust(), peerCred)
}

func dialTrusting(ctx context.Context, path string, t trust, peer func(*net.UnixConn) (int, int, error)) (*Client, error) {
	if err := t.checkOwner(path); err != nil {
		return nil, err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	if err := t.checkPeer(nc, path, peer); err != nil {
		nc.Close()
		return nil, err
	}
	return NewClient(nc), nil
}

// NewClient speaks the control protocol over an established connection; the
// Client owns nc from here on.
func NewClient(nc net.Conn) *Client {
	c := &Client{nc: nc, done: make(chan struct{}), pending: map[int64]chan reply{}}
	go c.read()
	return c
}

// closeWait bounds how long Close waits for the server to close its side.
const closeWait = time.Second

// Close closes the connection; pending calls fail with ErrClosed and the
// subscription's channel is closed. It first half-closes and waits (up to
// a second) for the server to close its side, so that when Close returns
// the server has released this connection's ownership (docs/control-protocol.md#ownership) and
// the next connection may mutate at once.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	sub := c.sub
	c.mu.Unlock()
	if hc, ok := c.nc.(interface{ CloseWrite() error }); ok && hc.CloseWrite() == nil {
		t := time.NewTimer(closeWait)
		select {
		case <-c.done:
		case <-t.C:
		}
		t.Stop()
	}
	err := c.nc.Close()
	<-c.done
	if sub != nil {
		sub.stop()
	}
	if errors.Is(err, net.ErrClosed) { // the server closed it first
		err = nil
	}
	return err
}

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the connection ended: nil for a clean end of stream. Valid
// after Done is closed.
func (c *Client) Err() error {
	<-c.done
	return c.readErr
}

// Call calls method with params (nil: none) and decodes the result into
// result (nil: discarded; *json.RawMessage: kept as sent).
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	// A map, not a jsonrpc.Message: its sorted keys keep the request bytes
	// servers and recorded sessions have always seen.
	req := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		req["params"] = params
	}
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return c.closedErr()
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	req["id"] = id
	line, err := json.Marshal(req)
	if err != nil {
		c.forget(id)
		return fmt.Errorf("%s: encoding params: %w", method, err)
	}
	c.wmu.Lock()
	_, err = c.nc.Write(append(line, '\n'))
	c.wmu.Unlock()
	if err != nil {
		c.forget(id)
		// The server may have said why before it closed: give the reader
		// a moment to reach its last lines.
		select {
		case <-c.done:
		case <-time.After(100 * time.Millisecond):
		}
		c.mu.Lock()
		refused := c.refusal != nil
		c.mu.Unlock()
		if refused {
			return c.closedErr()
		}
		return fmt.Errorf("%w: %v", ErrClosed, err)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return r.err
		}
		if result == nil {
			return nil
		}
		if raw, ok := result.(*json.RawMessage); ok {
			*raw = r.result
			return nil
		}
		if err := json.Unmarshal(r.result, result); err != nil {
			return fmt.Errorf("%s: decoding result: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		c.forget(id)
		return ctx.Err()
	}
}

func (c *Client) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

func (c *Client) read() {
	defer close(c.done)
	defer c.shutdown()
	sc := bufio.NewScanner(c.nc)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		if raw, ok := notificationParams(sc.Bytes()); ok {
			// The common line under a flood: parsed once, not twice.
			if ev, err := parseEvent(bytes.Clone(raw)); err == nil {
				c.mu.Lock()
				sub := c.sub
				c.mu.Unlock()
				if sub != nil {
					sub.push(ev)
				}
				continue
			}
			// Not what it seemed (another key after params…): the
			// general path below decides.
		}
		var in jsonrpc.Message
		if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
			continue // not ours to fix; the next line may be fine
		}
		if in.Method == "event" && in.ID == nil {
			c.mu.Lock()
			sub := c.sub
			c.mu.Unlock()
			if sub != nil {
				sub.push(newEvent(in.Params))
			}
			continue
		}
		if in.Error != nil && (len(in.ID) == 0 || string(in.ID) == "null") {
			c.mu.Lock()
			c.refusal = (*RPCError)(in.Error)
			c.mu.Unlock()
			continue
		}
		id, err := strconv.ParseInt(string(in.ID), 10, 64)
		if err != nil {
			continue
		}
		c.mu.Lock()
		ch := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ch == nil {
			continue
		}
		if in.Error != nil {
			ch <- reply{err: (*RPCError)(in.Error)}
		} else {
			ch <- reply{result: in.Result}
		}
	}
	c.readErr = sc.Err()
}

// notificationPrefix opens every event notification the server writes
// (host/control.EncodeEvent).
const notificationPrefix = `{"jsonrpc":"2.0","method":"event","params":`

// notificationParams returns the params of a line shaped exactly as the
// server writes an event notification. The caller still checks that they
// parse: a line with more keys after params does not.
func notificationParams(line []byte) ([]byte, bool) {
	if len(line) < len(notificationPrefix)+2 || string(line[:len(notificationPrefix)]) != notificationPrefix || line[len(line)-1] != '}' {
		return nil, false
	}
	return line[len(notificationPrefix) : len(line)-1], true
}

// closedErr is ErrClosed, with the error the server sent without an id
// (its reason for closing, when it gave one).
func (c *Client) closedErr() error {
	c.mu.Lock()
	r := c.refusal
	c.mu.Unlock()
	if r == nil {
		return ErrClosed
	}
	return fmt.Errorf("%w: %v", ErrClosed, r)
}

// shutdown fails pending calls and ends the subscription.
func (c *Client) shutdown() {
	c.nc.Close()
	c.mu.Lock()
	c.closed = true
	pending := c.pending
	c.pending = map[int64]chan reply{}
	sub := c.sub
	c.mu.Unlock()
	err := c.closedErr()
	for _, ch := range pending {
		ch <- reply{err: err}
	}
	if sub != nil {
		sub.finish()
	}
}
