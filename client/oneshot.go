package client

import (
	"context"
	"io"
	"time"
)

// CallOnce dials the socket at path, makes one call and closes the
// connection, all within timeout: one `avenor control` command.
func CallOnce(path, method string, params, result any, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := Dial(ctx, path)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Call(ctx, method, params, result)
}

// Tail subscribes to the live events of the server at path, from the next
// one on, and writes each as its raw JSON line to out until the server
// goes away, ctx ends or out refuses a write (stdout closed: | head); none
// of these is an error. An error is a dial or subscribe that failed.
func Tail(ctx context.Context, path string, out io.Writer) error {
	c, err := Dial(ctx, path)
	if err != nil {
		return err
	}
	defer c.Close()
	// subscribe with no params: live events from the next one on.
	sub, err := c.Subscribe(ctx, SubscribeOptions{})
	if err != nil {
		return err
	}
	for {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				return nil
			}
			if _, err := out.Write(append(ev.Raw[:len(ev.Raw):len(ev.Raw)], '\n')); err != nil {
				return nil
			}
		case <-ctx.Done():
			return nil
		}
	}
}
