package event

import (
	"sync"
	"testing"
	"time"
)

// A subscriber that never reads: Write never blocks, another subscriber
// gets everything, and when the slow one drains it sees one lag notice with
// the exact number of dropped events, placed at the gap, then the newest
// events, then live events again.
func TestSubscriberLag(t *testing.T) {
	const total, queue = 100, 4
	w := NewWriter(nil, Stamp{RunID: "r", RuntimeID: "rt_1", Now: newFakeClock(5000).Now}, Options{})
	slow := w.Subscribe(queue)
	defer slow.Close()
	fast := w.Subscribe(total)
	defer fast.Close()

	written := make(chan struct{})
	go func() {
		defer close(written)
		for range total {
			if _, err := w.Write(Event{"event": "x"}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	select {
	case <-written:
	case <-time.After(5 * time.Second):
		t.Fatal("Write blocked on a subscriber that does not read")
	}

	for want := int64(1); want <= total; want++ {
		if got := receive(t, fast)["seq"]; got != want {
			t.Fatalf("fast subscriber got seq %v, want %d", got, want)
		}
	}

	// Drain the slow one: at most one event taken before it stalled, then
	// one lag notice, then the queue's survivors — the newest events.
	var got []Event
	for len(got) == 0 || got[len(got)-1]["seq"] != int64(total) {
		got = append(got, receive(t, slow))
	}
	// Drops that race with the reader may split into adjacent notices; they
	// must sum to the gap they stand for.
	var prev, received, dropped, pending int64
	gaps := 0
	for _, ev := range got {
		if ev.Type() == TypeSubscriberLagged {
			n := ev["dropped_count"].(int64)
			if _, ok := ev["seq"]; ok {
				t.Errorf("lag notice has a seq: %v", ev)
			}
			if ev["run_id"] != "r" || ev["runtime_id"] != "rt_1" || ev["ts"] == nil {
				t.Errorf("lag notice not stamped: %v", ev)
			}
			if pending == 0 {
				gaps++
			}
			pending += n
			dropped += n
			continue
		}
		seq := ev["seq"].(int64)
		if seq != prev+pending+1 {
			t.Fatalf("seq %d after %d with %d reported dropped: %v", seq, prev, pending, seqsOf(got))
		}
		prev, pending = seq, 0
		received++
	}
	if gaps != 1 {
		t.Fatalf("%d gaps reported, want 1 (drops coalesced): %v", gaps, seqsOf(got))
	}
	if received+dropped != total {
		t.Fatalf("received %d + dropped %d != %d", received, dropped, total)
	}
	if received > queue+1 {
		t.Fatalf("received %d events through a queue of %d", received, queue)
	}
	if received < queue {
		t.Fatalf("received %d events, want at least the queue's %d newest", received, queue)
	}

	// Caught up: live events flow again with no notice.
	for range 3 {
		if _, err := w.Write(Event{"event": "y"}); err != nil {
			t.Fatal(err)
		}
	}
	for want := int64(total + 1); want <= total+3; want++ {
		ev := receive(t, slow)
		if ev["seq"] != want {
			t.Fatalf("after catching up got %v, want seq %d", ev, want)
		}
	}
}

// A second overflow after the first notice was delivered gets its own notice
// with only the new drops.
func TestSubscriberLagTwice(t *testing.T) {
	w := NewWriter(nil, Stamp{}, Options{})
	s := w.Subscribe(2)
	defer s.Close()

	dropsIn := func(n int) int64 {
		t.Helper()
		for range n {
			if _, err := w.Write(Event{"event": "x"}); err != nil {
				t.Fatal(err)
			}
		}
		latest := w.LatestSeq()
		var dropped int64
		for {
			ev := receive(t, s)
			if ev.Type() == TypeSubscriberLagged {
				dropped += ev["dropped_count"].(int64)
			} else if ev["seq"] == latest {
				return dropped
			}
		}
	}
	first := dropsIn(50)
	second := dropsIn(50)
	if first < 47 || first > 48 || second < 47 || second > 48 {
		t.Fatalf("dropped %d then %d, want 47 or 48 each (queue 2, one in hand)", first, second)
	}
}

// Replay and live join without a gap or a duplicate while another goroutine
// keeps writing.
func TestSubscribeWithReplayNoGap(t *testing.T) {
	const total = 2000
	w := NewWriter(nil, Stamp{}, Options{History: total})

	var wg sync.WaitGroup
	wg.Go(func() {
		for range total {
			if _, err := w.Write(Event{"event": "x"}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	// Subscribe somewhere in the middle of the stream.
	for w.LatestSeq() < total/4 {
		time.Sleep(time.Millisecond)
	}
	const afterSeq = 100
	replay, sub := w.SubscribeWithReplay(afterSeq, 0, total)
	defer sub.Close()

	next := int64(afterSeq + 1)
	for _, ev := range replay {
		if ev["seq"] != next {
			t.Fatalf("replay has seq %v, want %d", ev["seq"], next)
		}
		next++
	}
	for next <= total {
		ev := receive(t, sub)
		if ev["seq"] != next {
			t.Fatalf("live event has seq %v, want %d (replay ended at %d)", ev["seq"], next, int64(afterSeq)+int64(len(replay)))
		}
		next++
	}
	wg.Wait()
}

func TestSubscribeWithReplayLimitAndCursor(t *testing.T) {
	w := NewWriter(nil, Stamp{}, Options{History: 8})
	for range 10 {
		if _, err := w.Write(Event{"event": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	replay, sub := w.SubscribeWithReplay(0, 3, 0)
	if got := seqs(replay); !equalSeqs(got, []int64{8, 9, 10}) {
		t.Fatalf("replay = %v, want the latest 3", got)
	}
	sub.Close()

	// A cursor ahead of the writer: nothing to replay, and live events up
	// to the cursor are skipped.
	replay, sub = w.SubscribeWithReplay(12, 0, 0)
	defer sub.Close()
	if len(replay) != 0 {
		t.Fatalf("replay past the latest = %v", seqs(replay))
	}
	for range 3 {
		if _, err := w.Write(Event{"event": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := receive(t, sub)["seq"]; got != int64(13) {
		t.Fatalf("first live event has seq %v, want 13", got)
	}
}

func TestSubscriptionClose(t *testing.T) {
	w := NewWriter(nil, Stamp{}, Options{})
	s := w.Subscribe(4)
	if _, err := w.Write(Event{"event": "x"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close() // idempotent
	for range s.C() {
		// Anything already handed over may still be read; then C closes.
	}
	w.mu.Lock()
	n := len(w.subs)
	w.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d subscriptions registered after Close", n)
	}
	// Writing after a subscriber left still works.
	if _, err := w.Write(Event{"event": "x"}); err != nil {
		t.Fatal(err)
	}
}

// Close while the pump is blocked handing an event to nobody.
func TestSubscriptionCloseWhileBlocked(t *testing.T) {
	w := NewWriter(nil, Stamp{}, Options{})
	s := w.Subscribe(4)
	for range 10 {
		if _, err := w.Write(Event{"event": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked")
	}
}

// Closing the writer delivers what is queued, then closes every channel.
func TestWriterCloseEndsSubscriptions(t *testing.T) {
	w := NewWriter(nil, Stamp{}, Options{})
	s := w.Subscribe(8)
	defer s.Close()
	for range 3 {
		if _, err := w.Write(Event{"event": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	var got []int64
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-s.C():
			if !ok {
				if !equalSeqs(got, []int64{1, 2, 3}) {
					t.Fatalf("before close got %v, want 1 2 3", got)
				}
				// Subscribing to a closed writer: replay still works, C is closed.
				replay, late := w.SubscribeWithReplay(0, 0, 0)
				defer late.Close()
				if len(replay) != 3 {
					t.Fatalf("replay after Close has %d events, want 3", len(replay))
				}
				select {
				case _, ok := <-late.C():
					if ok {
						t.Fatal("event on a subscription to a closed writer")
					}
				case <-time.After(5 * time.Second):
					t.Fatal("subscription to a closed writer did not close")
				}
				return
			}
			got = append(got, ev["seq"].(int64))
		case <-timeout:
			t.Fatal("channel not closed after Writer.Close")
		}
	}
}

func seqsOf(evs []Event) []any {
	var out []any
	for _, ev := range evs {
		if ev.Type() == TypeSubscriberLagged {
			out = append(out, "lagged", ev["dropped_count"])
			continue
		}
		out = append(out, ev["seq"])
	}
	return out
}

// Receive takes everything queued at once, the lag notice first, the
// survivors in order, and reports the end of the stream; no goroutine.
func TestSubscriptionReceiveBatches(t *testing.T) {
	const queue = 4
	w := NewWriter(nil, Stamp{RunID: "r", Now: newFakeClock(5000).Now}, Options{})
	sub := w.Subscribe(queue)
	defer sub.Close()
	for range 10 {
		if _, err := w.Write(Event{"event": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	got, ok := sub.Receive(nil)
	if !ok || len(got) != queue+1 {
		t.Fatalf("Receive = %d events, %v; want a notice and %d events", len(got), ok, queue)
	}
	if got[0].Type() != TypeSubscriberLagged || got[0]["dropped_count"] != int64(10-queue) {
		t.Fatalf("first item %v, want a lag notice for %d events", got[0], 10-queue)
	}
	if s := seqs(got[1:]); !equalSeqs(s, []int64{7, 8, 9, 10}) {
		t.Fatalf("survivors %v, want 7..10", s)
	}

	// Live again, appended to the caller's buffer; a waiting Receive wakes.
	done := make(chan []Event)
	go func() {
		b, _ := sub.Receive(got[:0])
		done <- b
	}()
	time.Sleep(10 * time.Millisecond)
	if _, err := w.Write(Event{"event": "y"}); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-done:
		if len(b) != 1 || b[0]["seq"] != int64(11) {
			t.Fatalf("woken Receive = %v, want seq 11", seqsOf(b))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Receive did not wake for a new event")
	}

	// The writer closes: what is queued comes out, then false.
	if _, err := w.Write(Event{"event": "z"}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if b, ok := sub.Receive(nil); !ok || len(b) != 1 {
		t.Fatalf("after writer close Receive = %v, %v; want the last event", seqsOf(b), ok)
	}
	if b, ok := sub.Receive(nil); ok || len(b) != 0 {
		t.Fatalf("at the end Receive = %v, %v; want nothing, false", seqsOf(b), ok)
	}
}

// Close wakes a waiting Receive; after Close, Receive and C both report
// the end, and reading with both C and Receive is refused.
func TestSubscriptionReceiveClose(t *testing.T) {
	w := NewWriter(nil, Stamp{}, Options{})
	sub := w.Subscribe(4)
	done := make(chan bool)
	go func() {
		_, ok := sub.Receive(nil)
		done <- ok
	}()
	time.Sleep(10 * time.Millisecond)
	sub.Close()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("Receive reported true after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake Receive")
	}
	if _, ok := sub.Receive(nil); ok {
		t.Fatal("Receive after Close reported true")
	}
	if _, ok := <-sub.C(); ok {
		t.Fatal("C after Close delivered an event")
	}

	mixed := w.Subscribe(4)
	defer mixed.Close()
	mixed.C()
	defer func() {
		if recover() == nil {
			t.Fatal("Receive on a subscription read with C did not panic")
		}
	}()
	mixed.Receive(nil)
}

// A subscription's queue grows on demand up to its bound, keeps the
// bound's drop-oldest behaviour at every size, and gives a burst's queue
// back once drained.
func TestSubscriptionQueueGrows(t *testing.T) {
	for _, tc := range []struct {
		name        string
		bound       int
		writes      int
		wantDropped int64
	}{
		{"a trickle", 256, 1, 0},
		{"below the first queue", 256, minQueue - 1, 0},
		{"past a few doublings", 256, 100, 0},
		{"exactly the bound", 256, 256, 0},
		{"past the bound", 256, 300, 44},
		{"a bound that is not a doubling", 10, 25, 15},
		{"a bound of one", 1, 3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWriter(nil, testStamp(), Options{})
			defer w.Close()
			sub := w.Subscribe(tc.bound)
			defer sub.Close()
			for i := range tc.writes {
				if _, err := w.Write(Event{"event": "x", "i": i}); err != nil {
					t.Fatal(err)
				}
			}
			sub.mu.Lock()
			held := len(sub.queue)
			sub.mu.Unlock()
			if held > tc.bound || held < min(tc.writes, tc.bound) {
				t.Errorf("queue of %d entries for %d events under a bound of %d", held, tc.writes, tc.bound)
			}
			items, more := sub.ReceiveItems(nil)
			if !more {
				t.Fatal("subscription ended")
			}
			var dropped int64
			if tc.wantDropped > 0 {
				dropped, _ = items[0].Event()["dropped_count"].(int64)
				items = items[1:]
			}
			if dropped != tc.wantDropped {
				t.Errorf("dropped %d, want %d", dropped, tc.wantDropped)
			}
			if want := min(tc.writes, tc.bound); len(items) != want {
				t.Fatalf("received %d events, want %d", len(items), want)
			}
			for i, it := range items {
				seq, _ := it.Seq()
				if want := int64(tc.writes - len(items) + 1 + i); seq != want {
					t.Fatalf("event %d has seq %d, want %d (the latest, in order)", i, seq, want)
				}
			}
			sub.mu.Lock()
			held = cap(sub.queue)
			sub.mu.Unlock()
			if held > queueKeep {
				t.Errorf("a drained subscription keeps %d entries, want at most %d", held, queueKeep)
			}
		})
	}
}
