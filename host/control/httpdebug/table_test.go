package httpdebug

import (
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/event"
)

func seqs(t *testing.T, sub Subscription, n int) []int64 {
	t.Helper()
	var out []int64
	for len(out) < n {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				t.Fatalf("stream ended after %v", out)
			}
			s, _ := control.SeqOf(ev)
			out = append(out, s)
		case <-time.After(10 * time.Second):
			t.Fatalf("got %v, waiting for %d", out, n)
		}
	}
	return out
}

func ended(t *testing.T, sub Subscription) {
	t.Helper()
	select {
	case ev, ok := <-sub.C():
		if ok {
			t.Fatalf("stream went on after the end: %v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stream did not end")
	}
}

func TestOneShotSubscribe(t *testing.T) {
	rt := newFakeRuntime("")
	o := newOneShot(rt, nil)
	for range 4 {
		rt.write(t, event.Event{"event": "x"})
	}
	live, _ := o.Subscribe(SubscribeOptions{Limit: 64})
	defer live.Close()
	replay, _ := o.Subscribe(SubscribeOptions{Replay: true, Limit: 2})
	defer replay.Close()
	ahead, _ := o.Subscribe(SubscribeOptions{AfterSeq: 6, Limit: 64})
	defer ahead.Close()
	for range 3 {
		rt.write(t, event.Event{"event": "x"})
	}
	if got := seqs(t, live, 3); got[0] != 5 || got[2] != 7 {
		t.Fatalf("live: %v", got)
	}
	if got := seqs(t, replay, 5); got[0] != 3 || got[4] != 7 {
		t.Fatalf("replay of 2 then live: %v", got)
	}
	if got := seqs(t, ahead, 1); got[0] != 7 {
		t.Fatalf("after_seq 6: %v", got)
	}
	o.End()
	o.End()
	ended(t, live)
	ended(t, replay)
	ended(t, ahead)

	after, _ := o.Subscribe(SubscribeOptions{Replay: true, Limit: 64, AfterSeq: 5})
	defer after.Close()
	if got := seqs(t, after, 2); got[0] != 6 || got[1] != 7 {
		t.Fatalf("replay after the end: %v", got)
	}
	ended(t, after)
}

// Close ends a stream whose reader stopped reading.
func TestOneShotCloseUnread(t *testing.T) {
	rt := newFakeRuntime("")
	o := newOneShot(rt, nil)
	sub, _ := o.Subscribe(SubscribeOptions{Limit: 64})
	for range 10 {
		rt.write(t, event.Event{"event": "x"})
	}
	sub.Close()
	sub.Close()
}
