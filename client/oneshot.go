package client

import (
	"context"
	"fmt"
	"io"
	"strconv"
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

// ParseWait reads the timeout of a wait as `avenor control` takes it, as
// spawn's timeout (docs/control-protocol.md#spawn): seconds ("60") or a Go
// duration ("1m"), at most max. param is what to send, wait how long the
// call may take; "" is max and sends nothing. The errors name --timeout.
func ParseWait(s string, max time.Duration) (param any, wait time.Duration, err error) {
	if s == "" {
		return nil, max, nil
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil && n >= 0 {
		param, wait = n, time.Duration(n*float64(time.Second))
	} else if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		param, wait = s, d
	} else {
		return nil, 0, fmt.Errorf("--timeout %q: want seconds (60) or a Go duration (1m)", s)
	}
	if wait > max {
		return nil, 0, fmt.Errorf("--timeout %s: at most %v", s, max)
	}
	return param, wait, nil
}

// WaitForCapacityOnce dials the supervisor at path and waits, up to wait
// (param as ParseWait gave it) and margin for dialling and the answer,
// until a spawn would be admitted.
func WaitForCapacityOnce(ctx context.Context, path string, param any, wait, margin time.Duration) (CapacityState, error) {
	ctx, cancel := context.WithTimeout(ctx, wait+margin)
	defer cancel()
	c, err := Dial(ctx, path)
	if err != nil {
		return CapacityState{}, err
	}
	defer c.Close()
	return c.WaitForCapacity(ctx, param)
}
