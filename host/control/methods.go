package control

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// Handler answers one call. It returns the result to send, or an error: an
// *Error chooses its code, ErrNoPendingPermission answers -32001, anything
// else -32000 with the error's text. ctx ends when the connection closes or
// the server stops.
type Handler func(ctx context.Context, call *Call) (any, error)

// Method is one entry of the method table.
type Method struct {
	// Mutating methods need ownership of the server (docs/control-protocol.md#ownership): the
	// first connection to call one becomes the owner, other connections get
	// -32010 until it disconnects.
	Mutating bool
	// Concurrent methods run on their own goroutine, so a long wait does
	// not hold up the connection's later requests. Others run in order.
	Concurrent bool
	Handler    Handler
}

// Call is one request as a handler sees it.
type Call struct {
	// Method is the method's name.
	Method string
	// Params is the params value as sent; nil when absent.
	Params json.RawMessage
	// Conn is the connection the call came on.
	Conn *Conn

	afterReply []func()
}

// Decode unmarshals the params into v (absent params leave v as is). A
// mismatch answers -32602 with what was wrong.
func (c *Call) Decode(v any) error {
	if c.Params == nil {
		return nil
	}
	if !bytes.HasPrefix(c.Params, []byte("{")) {
		return InvalidParams("params must be an object")
	}
	if err := json.Unmarshal(c.Params, v); err != nil {
		return InvalidParams(paramsErrorText(err))
	}
	return nil
}

// AfterReply runs f once the response has been written (at once when the
// call has no id): subscribe uses it so that the result precedes the first
// event.
func (c *Call) AfterReply(f func()) { c.afterReply = append(c.afterReply, f) }

func paramsErrorText(err error) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok && te.Field != "" {
		return fmt.Sprintf("%s: expected %s, got %s", te.Field, te.Type, te.Value)
	}
	return err.Error()
}
