package control

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/event"
)

// writerFleet is a server whose subscribe_writers method forwards every
// one of its writers to the calling connection, as a stable supervisor's
// subscribe {} does with its runtimes.
type writerFleet struct {
	s *Server

	mu      sync.Mutex
	writers []*event.Writer // what subscribe_writers follows
	all     []*event.Writer // closed at cleanup
}

// startWriterFleet starts a server over n writers, runtime ids w0, w1, ….
func startWriterFleet(t *testing.T, n int) *writerFleet {
	t.Helper()
	f := &writerFleet{}
	f.renew(n)
	f.s = NewServer(Config{Path: sockPath(t)})
	f.s.Handle("subscribe_writers", Method{Handler: func(_ context.Context, c *Call) (any, error) {
		f.mu.Lock()
		subs := make([]*event.Subscription, len(f.writers))
		for i, w := range f.writers {
			subs[i] = w.Subscribe(SubscriberQueue)
		}
		f.mu.Unlock()
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
		for _, w := range f.all {
			w.Close()
		}
	})
	return f
}

// renew replaces the writers subscribe_writers follows with n new ones.
func (f *writerFleet) renew(n int) []*event.Writer {
	ws := make([]*event.Writer, n)
	for i := range ws {
		ws[i] = event.NewWriter(nil,
			event.Stamp{RunID: "run1", RuntimeID: "w" + strconv.Itoa(i), Now: fixedNow}, event.Options{})
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writers = ws
	f.all = append(f.all, ws...)
	return ws
}

// closeWriters closes the current writers, as runtimes that end.
func (f *writerFleet) closeWriters() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.writers {
		w.Close()
	}
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
		// The test's own reader is small, so what is measured is the
		// server's: 50 of dialRaw's 1 MiB readers would be most of it.
		cs[i].r = bufio.NewReaderSize(cs[i].nc, 16<<10)
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
	if per := float64(idle.goroutines-base.goroutines) / conns; per > 2 {
		t.Errorf("%.1f goroutines a subscriber connection, want at most 2 (its reader and its forwarder)", per)
	}
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

// settleGoroutines waits until at most want goroutines run, and returns
// how many do.
func settleGoroutines(want int) int {
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(time.Millisecond)
	}
}

// checkInOrder fails unless got holds events 1..perWriter of each of
// writers runtimes (w0, w1, …), each once and in seq order per runtime.
func checkInOrder(t *testing.T, got []notification, writers, perWriter int) {
	t.Helper()
	last := map[string]int64{}
	for _, n := range got {
		id := n.Params.RuntimeID
		if n.Params.Seq != last[id]+1 {
			t.Fatalf("runtime %q: seq %d after %d", id, n.Params.Seq, last[id])
		}
		last[id] = n.Params.Seq
	}
	if len(last) != writers {
		t.Fatalf("events of %d runtimes, want %d", len(last), writers)
	}
	for id, seq := range last {
		if seq != int64(perWriter) {
			t.Fatalf("runtime %q: last seq %d, want %d", id, seq, perWriter)
		}
	}
}

// One connection following 200 runtimes holds one forwarder goroutine for
// all of them (it held one each), and every event of every runtime
// arrives once, in seq order per runtime. When they all end, the
// forwarder goes; a later subscription starts another.
func TestForwardOneGoroutinePerConnection(t *testing.T) {
	const writers, perWriter = 200, 5
	f := startWriterFleet(t, writers)
	c := dialRaw(t, f.s.Path())
	if got := c.call(`{"jsonrpc":"2.0","id":1,"method":"identity"}`); !strings.Contains(got, `"token"`) {
		t.Fatal(got)
	}
	before := runtime.NumGoroutine()
	f.subscribe(t, c)
	if n := runtime.NumGoroutine(); n > before+2 {
		t.Fatalf("%d subscriptions on one connection added %d goroutines, want at most 2", writers, n-before)
	}
	for range perWriter {
		for _, w := range f.writers {
			if _, err := w.Write(event.Event{"event": "agent.message_chunk"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkInOrder(t, readEvents(t, c, writers*perWriter), writers, perWriter)

	f.closeWriters()
	if n := settleGoroutines(before); n > before {
		t.Fatalf("%d goroutines once every followed runtime ended, want %d: the forwarder stayed", n, before)
	}
	f.renew(writers)
	f.subscribe(t, c)
	for _, w := range f.writers {
		if _, err := w.Write(event.Event{"event": "agent.message_chunk"}); err != nil {
			t.Fatal(err)
		}
	}
	checkInOrder(t, readEvents(t, c, writers), writers, 1)
}

// A runtime that floods its subscription does not hold up another one's
// events: each round takes every ready subscription's queue once.
func TestForwardFloodDoesNotStarve(t *testing.T) {
	f := startWriterFleet(t, 2)
	c := dialRaw(t, f.s.Path())
	f.subscribe(t, c)
	flood, quiet := f.writers[0], f.writers[1]
	stop := make(chan struct{})
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := flood.Write(event.Event{"event": "agent.message_chunk"}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() {
		close(stop)
		<-flooded
	}()
	for range 3 { // let the flood fill the queue and the socket
		readEvents(t, c, SubscriberQueue)
	}
	if _, err := quiet.Write(event.Event{"event": "agent.message_chunk"}); err != nil {
		t.Fatal(err)
	}
	// Within the queue's bound plus what the socket holds, the quiet
	// runtime's event comes through.
	for range 100 * SubscriberQueue {
		for _, n := range readEvents(t, c, 1) {
			if n.Params.RuntimeID == "w1" {
				return
			}
		}
	}
	t.Fatal("the quiet runtime's event did not come while another flooded")
}
