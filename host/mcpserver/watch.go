package mcpserver

import (
	"context"
	"sync"
	"time"

	"github.com/avenor-go/avenor/client"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// watcher is the one subscription that wakes every wait on one supervisor.
// A wait must not hold a control connection of its own: a supervisor takes
// at most control.MaxConnections, and an agent that starts a hundred waits
// at once would lock everyone else out, its owner's `avenor control list`
// included. So every wait of this server on a supervisor shares one
// connection, subscribed once to the live events of all its runtimes; an
// event of a runtime wakes that runtime's waits, which then read the status
// on the server's persistent connection (the status is the judge, an event
// only says "look again"). The connection is dialled by the first wait and
// closed when the last one ends. When it fails, the waits read the status
// every WaitPoll instead, and the next wait (or a waiting one's next poll)
// dials again.
type watcher struct {
	socket string

	mu      sync.Mutex
	c       *client.Client // nil: not subscribed
	waiters map[string]map[chan struct{}]struct{}
	n       int            // waits registered
	retryAt time.Time      // after a failed dial, none before this
	closing sync.WaitGroup // fan-outs running, connections being closed
	closed  bool
}

func newWatcher(socket string) *watcher {
	return &watcher{socket: socket, waiters: map[string]map[chan struct{}]struct{}{}}
}

// add registers a wait on runtimeID: its channel gets a signal (buffered,
// never blocking the fan-out) whenever an event of the runtime arrives, or
// when the subscription is lost or lagged (any runtime may have moved).
// remove must be called when the wait ends.
func (w *watcher) add(ctx context.Context, runtimeID string) (wake chan struct{}, remove func()) {
	wake = make(chan struct{}, 1)
	w.mu.Lock()
	set := w.waiters[runtimeID]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		w.waiters[runtimeID] = set
	}
	set[wake] = struct{}{}
	w.n++
	w.mu.Unlock()
	w.ensure(ctx)
	return wake, func() {
		w.mu.Lock()
		// A runtime's set is deleted only once empty, so the current one
		// holds wake.
		cur := w.waiters[runtimeID]
		delete(cur, wake)
		if len(cur) == 0 {
			delete(w.waiters, runtimeID)
		}
		w.n--
		var c *client.Client
		if w.n == 0 {
			c, w.c = w.c, nil
		}
		w.mu.Unlock()
		if c != nil {
			w.closeConn(c)
		}
	}
}

// ensure subscribes when nothing is subscribed and a wait is registered.
// Dialling happens under the lock so that simultaneous waits share one
// connection instead of each dialling its own.
func (w *watcher) ensure(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.c != nil || w.n == 0 || w.closed || time.Now().Before(w.retryAt) {
		return
	}
	dctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	c, err := client.Dial(dctx, w.socket)
	if err != nil {
		// The waits poll; one of them tries again after a WaitPoll (not
		// every wait at every tick).
		w.retryAt = time.Now().Add(WaitPoll)
		return
	}
	sub, err := c.Subscribe(dctx, client.SubscribeOptions{})
	if err != nil {
		w.closeConnLocked(c)
		w.retryAt = time.Now().Add(WaitPoll)
		return
	}
	w.c = c
	w.closing.Add(1)
	go func() {
		defer w.closing.Done()
		w.fanOut(c, sub)
	}()
}

// fanOut wakes the waits of each event's runtime until the subscription
// ends; then every wait is woken (it polls from there on) and the
// connection is forgotten.
func (w *watcher) fanOut(c *client.Client, sub *client.Subscription) {
	for ev := range sub.C() {
		w.mu.Lock()
		if ev.Name == sdk.EventSubscriberLagged {
			w.wakeAllLocked()
		} else {
			for wake := range w.waiters[ev.RuntimeID] {
				signal(wake)
			}
		}
		w.mu.Unlock()
	}
	w.mu.Lock()
	if w.c == c {
		w.c = nil
		w.closeConnLocked(c)
	}
	w.wakeAllLocked()
	w.mu.Unlock()
}

func (w *watcher) wakeAllLocked() {
	for _, set := range w.waiters {
		for wake := range set {
			signal(wake)
		}
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// closeConn closes c in the background: Close waits for the server to
// close its side, which no wait should sit through.
func (w *watcher) closeConn(c *client.Client) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closeConnLocked(c)
}

func (w *watcher) closeConnLocked(c *client.Client) {
	w.closing.Add(1)
	go func() {
		defer w.closing.Done()
		c.Close()
	}()
}

// close ends the subscription and waits until its connection is closed.
func (w *watcher) close() {
	w.mu.Lock()
	w.closed = true
	c := w.c
	w.c = nil
	if c != nil {
		w.closeConnLocked(c)
	}
	w.mu.Unlock()
	w.closing.Wait()
}

// subscribed reports whether a subscription is open (for tests).
func (w *watcher) subscribed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.c != nil
}
