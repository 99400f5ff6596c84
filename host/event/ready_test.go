package event

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// readyNow is r's ready list as it stands, without waiting.
func readyNow(r *Ready) []*Subscription {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.list)
}

// waitNow is Wait that fails the test instead of blocking for long.
func waitNow(t *testing.T, r *Ready) []*Subscription {
	t.Helper()
	type result struct {
		subs []*Subscription
		ok   bool
	}
	got := make(chan result, 1)
	go func() {
		subs, ok := r.Wait(nil)
		got <- result{subs, ok}
	}()
	select {
	case res := <-got:
		if !res.ok {
			t.Fatal("Wait reported the Ready closed")
		}
		return res.subs
	case <-time.After(5 * time.Second):
		r.Close() // ends the waiting goroutine
		t.Fatal("nothing became ready within 5s")
		return nil
	}
}

// taken renders items as seqs, a lag notice as minus its dropped_count.
func taken(items []Item) []int64 {
	out := []int64{}
	for _, it := range items {
		if seq, ok := it.Seq(); ok {
			out = append(out, seq)
			continue
		}
		out = append(out, -it.Event()["dropped_count"].(int64))
	}
	return out
}

// attached returns a writer and a subscription of queue attached to a
// fresh Ready, with the mark Attach set already taken.
func attached(t *testing.T, queue int) (*Writer, *Subscription, *Ready) {
	t.Helper()
	w := NewWriter(nil, Stamp{RunID: "r", RuntimeID: "rt_1", Now: newFakeClock(5000).Now}, Options{})
	s := w.Subscribe(queue)
	r := NewReady()
	t.Cleanup(func() {
		r.Close()
		s.Close()
		w.Close()
	})
	r.Attach(s)
	if got := waitNow(t, r); len(got) != 1 || got[0] != s {
		t.Fatalf("Attach marked %v, want the subscription once", got)
	}
	if items, more := s.TakeItems(nil); len(items) != 0 || !more {
		t.Fatalf("a fresh subscription gave %v, %v", taken(items), more)
	}
	return w, s, r
}

func writeN(t *testing.T, w *Writer, n int) {
	t.Helper()
	for range n {
		if _, err := w.Write(Event{"event": "x"}); err != nil {
			t.Fatal(err)
		}
	}
}

// What a Ready's reader sees after each kind of change to an attached
// subscription: marked once however many events came, the queue taken in
// seq order with drops as one lag notice in front, the end reported with
// the last events, and nothing marked when nothing changed.
func TestReadyMarksAndTakes(t *testing.T) {
	cases := []struct {
		name   string
		queue  int
		change func(t *testing.T, w *Writer, s *Subscription)
		ready  bool    // marked after the change
		want   []int64 // seqs taken; -n a lag notice of n drops
		more   bool    // TakeItems's report
	}{
		{"nothing changed", 0, func(*testing.T, *Writer, *Subscription) {}, false, []int64{}, true},
		{"three events, one mark", 0, func(t *testing.T, w *Writer, _ *Subscription) { writeN(t, w, 3) }, true, []int64{1, 2, 3}, true},
		{"drops, one lag notice first", 4, func(t *testing.T, w *Writer, _ *Subscription) { writeN(t, w, 10) }, true, []int64{-6, 7, 8, 9, 10}, true},
		{"writer closed after events", 0, func(t *testing.T, w *Writer, _ *Subscription) {
			writeN(t, w, 2)
			w.Close()
		}, true, []int64{1, 2}, false},
		{"subscription closed", 0, func(t *testing.T, w *Writer, s *Subscription) {
			writeN(t, w, 2)
			s.Close()
		}, true, []int64{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, s, r := attached(t, tc.queue)
			tc.change(t, w, s)
			got := readyNow(r)
			if tc.ready != (len(got) == 1 && got[0] == s) || len(got) > 1 {
				t.Fatalf("ready list %v after the change, want the subscription listed: %v, once", got, tc.ready)
			}
			items, more := s.TakeItems(nil)
			if !slices.Equal(taken(items), tc.want) || more != tc.more {
				t.Fatalf("TakeItems = %v, %v; want %v, %v", taken(items), more, tc.want, tc.more)
			}
			if !more && s.fan.Load() != nil {
				t.Fatal("an ended subscription is still attached")
			}
		})
	}
}

// The mark is cleared before the reader takes the queue: an event pushed
// between Wait and TakeItems is taken and marks the subscription again
// (at worst a round that finds nothing), and one pushed after TakeItems
// is marked, so none waits for an unrelated wake.
func TestReadyNoLostWake(t *testing.T) {
	w, s, r := attached(t, 0)
	writeN(t, w, 1)
	waitNow(t, r)
	writeN(t, w, 1) // between Wait and TakeItems
	if items, _ := s.TakeItems(nil); !slices.Equal(taken(items), []int64{1, 2}) {
		t.Fatalf("took %v, want [1 2]", taken(items))
	}
	if got := waitNow(t, r); len(got) != 1 {
		t.Fatalf("Wait = %v, want the subscription once more", got)
	}
	if items, _ := s.TakeItems(nil); len(items) != 0 {
		t.Fatalf("took %v, want nothing", taken(items))
	}
	writeN(t, w, 1) // after TakeItems
	waitNow(t, r)
	if items, _ := s.TakeItems(nil); !slices.Equal(taken(items), []int64{3}) {
		t.Fatalf("took %v, want [3]", taken(items))
	}
}

// Many writers written concurrently, one reader: every event arrives
// once, in seq order per writer, and the reader learns of every end.
func TestReadyManyWritersOneReader(t *testing.T) {
	const writers, events = 50, 200
	r := NewReady()
	defer r.Close()
	ws := make([]*Writer, writers)
	subs := map[*Subscription]int{}
	for i := range ws {
		ws[i] = NewWriter(nil, Stamp{RunID: "r"}, Options{})
		s := ws[i].Subscribe(events) // room for all: nothing dropped
		defer s.Close()
		subs[s] = i
		r.Attach(s)
	}
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range events {
				if _, err := w.Write(Event{"event": "x"}); err != nil {
					t.Error(err)
				}
			}
			w.Close()
		}()
	}
	last := make([]int64, writers)
	ended := 0
	var marked []*Subscription
	var items []Item
	for ended < writers {
		var ok bool
		marked, ok = r.Wait(marked[:0])
		if !ok {
			t.Fatal("Wait ended")
		}
		seen := map[*Subscription]bool{}
		for _, s := range marked {
			if seen[s] {
				t.Fatal("a subscription listed twice in one Wait")
			}
			seen[s] = true
			var more bool
			items, more = s.TakeItems(items[:0])
			i := subs[s]
			for _, seq := range taken(items) {
				if seq != last[i]+1 {
					t.Fatalf("writer %d: seq %d after %d", i, seq, last[i])
				}
				last[i] = seq
			}
			if !more {
				ended++
				if last[i] != events {
					t.Fatalf("writer %d ended at seq %d of %d", i, last[i], events)
				}
			}
		}
	}
	wg.Wait()
	if got := readyNow(r); len(got) != 0 {
		t.Fatalf("%d ended subscriptions still listed", len(got))
	}
}

// Subscriptions come out of Wait in the order they became ready, each
// once, however often its writer wrote since.
func TestReadyOrderOfReadiness(t *testing.T) {
	w1, s1, r := attached(t, 0)
	w2 := NewWriter(nil, Stamp{}, Options{})
	defer w2.Close()
	s2 := w2.Subscribe(0)
	defer s2.Close()
	r.Attach(s2)
	waitNow(t, r)
	writeN(t, w2, 1)
	writeN(t, w1, 1)
	writeN(t, w2, 5)
	if got := waitNow(t, r); !slices.Equal(got, []*Subscription{s2, s1}) {
		t.Fatalf("Wait = %v, want [s2 s1]", got)
	}
}

// Close ends a Wait in progress and every later one.
func TestReadyCloseWhileWaiting(t *testing.T) {
	_, _, r := attached(t, 0)
	done := make(chan bool)
	go func() {
		_, ok := r.Wait(nil)
		done <- ok
	}()
	time.Sleep(10 * time.Millisecond) // let it block
	r.Close()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("Wait reported ready subscriptions after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end Wait")
	}
	if _, ok := r.Wait(nil); ok {
		t.Fatal("Wait after Close reported ready subscriptions")
	}
	r.Close() // idempotent
}

// A subscription that has left its Ready (its end taken) is never listed
// again, even when it is closed afterwards.
func TestReadyEndedNotListedAgain(t *testing.T) {
	w, s, r := attached(t, 0)
	w.Close()
	waitNow(t, r)
	if _, more := s.TakeItems(nil); more {
		t.Fatal("the end was not reported")
	}
	s.Close()
	if got := readyNow(r); len(got) != 0 {
		t.Fatalf("listed after it left: %v", got)
	}
}

// A subscription has one Ready at most: a second Attach is a programming
// error.
func TestReadyAttachTwicePanics(t *testing.T) {
	_, s, _ := attached(t, 0)
	defer func() {
		if recover() == nil {
			t.Fatal("a second Attach did not panic")
		}
	}()
	NewReady().Attach(s)
}
