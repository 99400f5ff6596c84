package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// fakeEvents is a control socket that answers subscribe and then sends the
// events written to send; it counts its connections.
type fakeEvents struct {
	ln    net.Listener
	send  chan string
	mu    sync.Mutex
	conns int
	done  chan struct{}
}

func newFakeEvents(t *testing.T) *fakeEvents {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeEvents{ln: ln, send: make(chan string, 16), done: make(chan struct{})}
	var wg sync.WaitGroup
	go func() {
		defer close(f.done)
		defer wg.Wait()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.conns++
			f.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				r := bufio.NewReader(c)
				line, err := r.ReadBytes('\n')
				if err != nil {
					return
				}
				var req struct {
					ID json.RawMessage `json:"id"`
				}
				_ = json.Unmarshal(line, &req)
				_, _ = c.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"subscribed":true}}` + "\n"))
				closed := make(chan struct{})
				go func() { _, _ = r.ReadBytes('\n'); close(closed) }() // the client's close
				for {
					select {
					case ev := <-f.send:
						_, _ = c.Write([]byte(`{"jsonrpc":"2.0","method":"event","params":` + ev + "}\n"))
					case <-closed:
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-f.done })
	return f
}

func (f *fakeEvents) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns
}

func woken(c chan struct{}) bool {
	select {
	case <-c:
		return true
	case <-time.After(2 * time.Second):
		return false
	}
}

// TestWatcherSharesOneConnection: many waits on one supervisor share one
// subscribed connection; an event wakes the waits of its runtime only; the
// connection closes with the last wait.
func TestWatcherSharesOneConnection(t *testing.T) {
	f := newFakeEvents(t)
	w := newWatcher(f.ln.Addr().String())
	defer w.close()
	ctx := context.Background()
	var removes []func()
	var rt1, rt2 []chan struct{}
	for i := range 50 {
		id := "rt_1"
		if i%2 == 1 {
			id = "rt_2"
		}
		wake, remove := w.add(ctx, id)
		removes = append(removes, remove)
		if id == "rt_1" {
			rt1 = append(rt1, wake)
		} else {
			rt2 = append(rt2, wake)
		}
	}
	if n := f.count(); n != 1 || !w.subscribed() {
		t.Fatalf("50 waits opened %d connections (subscribed %v), want 1", n, w.subscribed())
	}
	f.send <- `{"event":"agent.message_chunk","seq":3,"runtime_id":"rt_1"}`
	for i, c := range rt1 {
		if !woken(c) {
			t.Fatalf("wait %d on rt_1 was not woken by its event", i)
		}
	}
	for i, c := range rt2 {
		select {
		case <-c:
			t.Errorf("wait %d on rt_2 was woken by rt_1's event", i)
		default:
		}
	}
	f.send <- `{"event":"subscriber.lagged","dropped_count":5}`
	for i, c := range rt2 {
		if !woken(c) {
			t.Fatalf("wait %d on rt_2 was not woken by a lagged subscription", i)
		}
	}
	for _, remove := range removes {
		remove()
	}
	if w.subscribed() {
		t.Error("the subscription outlives the last wait")
	}
	// The next wait subscribes again.
	_, remove := w.add(ctx, "rt_3")
	defer remove()
	if n := f.count(); n != 2 || !w.subscribed() {
		t.Errorf("after the last wait ended, a new one: %d connections in all, subscribed %v", n, w.subscribed())
	}
}
