package control

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/event"
)

// writerFleet is a server whose subscribe_writers method forwards every
// one of its writers to the calling connection, as a stable supervisor's
// subscribe {} does with its runtimes.
type writerFleet struct {
	s       *Server
	writers []*event.Writer
}

// startWriterFleet starts a server over n writers, runtime ids w0, w1, ….
func startWriterFleet(t *testing.T, n int) *writerFleet {
	t.Helper()
	f := &writerFleet{}
	for i := range n {
		f.writers = append(f.writers, event.NewWriter(nil,
			event.Stamp{RunID: "run1", RuntimeID: "w" + strconv.Itoa(i), Now: fixedNow}, event.Options{}))
	}
	f.s = NewServer(Config{Path: sockPath(t)})
	f.s.Handle("subscribe_writers", Method{Handler: func(_ context.Context, c *Call) (any, error) {
		subs := make([]*event.Subscription, len(f.writers))
		for i, w := range f.writers {
			subs[i] = w.Subscribe(SubscriberQueue)
		}
		c.AfterReply(func() {
			for _, sub := range subs {
				c.Conn.Forward(nil, sub, 0)
			}
		})
		return map[string]any{"subscribed": true}, nil
	}})
	if err := f.s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.s.Close()
		for _, w := range f.writers {
			w.Close()
		}
	})
	return f
}

// subscribe makes c follow every writer. The identity call after it is
// answered once subscribe_writers's forwarding has started (a
// connection's calls run in order, after-reply hooks included).
func (f *writerFleet) subscribe(t *testing.T, c *rawConn) {
	t.Helper()
	if got := c.call(`{"jsonrpc":"2.0","id":1,"method":"subscribe_writers"}`); !strings.Contains(got, `"subscribed":true`) {
		t.Fatal(got)
	}
	if got := c.call(`{"jsonrpc":"2.0","id":2,"method":"identity"}`); !strings.Contains(got, `"token"`) {
		t.Fatal(got)
	}
}

// forwardCost is what the process holds: goroutines, and heap plus
// goroutine stacks in use.
type forwardCost struct {
	goroutines int
	inUse      uint64
}

func measureForwardCost() forwardCost {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return forwardCost{goroutines: runtime.NumGoroutine(), inUse: ms.HeapInuse + ms.StackInuse}
}

// notification is an event notification as the tests read it.
type notification struct {
	Method string `json:"method"`
	Params struct {
		Event     string `json:"event"`
		Seq       int64  `json:"seq"`
		RuntimeID string `json:"runtime_id"`
	} `json:"params"`
}

// readEvents reads n event notifications from c, in the order they came.
func readEvents(t *testing.T, c *rawConn, n int) []notification {
	t.Helper()
	out := make([]notification, 0, n)
	for len(out) < n {
		line := c.recv()
		var nt notification
		if err := json.Unmarshal([]byte(line), &nt); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if nt.Method != "event" {
			t.Fatalf("not an event notification: %s", line)
		}
		out = append(out, nt)
	}
	return out
}

// What 50 subscriber connections, each following 200 writers, cost
// while idle and after an event from every writer reached every one of
// them: the figures for docs/stable.md's per-subscriber cost.
func TestForwardCost200Writers50Subscribers(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 subscriptions")
	}
	const writers, conns = 200, 50
	f := startWriterFleet(t, writers)
	base := measureForwardCost()
	cs := make([]*rawConn, conns)
	for i := range cs {
		cs[i] = dialRaw(t, f.s.Path())
		f.subscribe(t, cs[i])
	}
	idle := measureForwardCost()
	for i, w := range f.writers {
		if _, err := w.Write(event.Event{"event": "agent.message_chunk", "i": i}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cs {
		readEvents(t, c, writers)
	}
	after := measureForwardCost()
	perConn := func(c forwardCost) string {
		return fmt.Sprintf("%d goroutines (%.1f a connection), %.1f MB heap+stacks (%.1f KB a connection)",
			c.goroutines-base.goroutines, float64(c.goroutines-base.goroutines)/conns,
			float64(c.inUse-base.inUse)/1e6, float64(c.inUse-base.inUse)/conns/1e3)
	}
	t.Logf("%d writers × %d subscriber connections, idle: %s", writers, conns, perConn(idle))
	t.Logf("%d writers × %d subscriber connections, after one event each: %s", writers, conns, perConn(after))
	for _, c := range cs {
		c.nc.Close()
	}
	waitConnections(t, f.s, 0)
}

// waitConnections waits until s has n connections open.
func waitConnections(t *testing.T, s *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.Connections() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", s.Connections(), n)
		}
		time.Sleep(time.Millisecond)
	}
}
