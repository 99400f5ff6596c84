package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/avenor-go/avenor/client"
)

// testNode is a node agent's publishing half on a dev server's fleet.
func testNode(t *testing.T) (*node, context.Context) {
	t.Helper()
	s, auth := devServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	nc, js, err := Connect(ctx, s.ClientURL(), "test", auth)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	st, err := Setup(ctx, js, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &node{cfg: NodeConfig{Node: "n1"}, log: hclog.NewNullLogger(), js: js, st: st,
		byLocal: map[string]*owned{}, byFleet: map[string]*owned{},
		window: make(chan struct{}, PublishWindow), spawning: map[chan struct{}]bool{}, took: make(chan struct{}, 1)}, ctx
}

// TestOutboxKeepsEachRuntimeInOrder: events of many runtimes, queued
// interleaved (as the supervisor's subscription delivers them), are
// published concurrently, each runtime's in order; a repeated seq is
// stored once; a runtime the node no longer owns publishes nothing more;
// every drainer ends once its outbox is empty.
func TestOutboxKeepsEachRuntimeInOrder(t *testing.T) {
	n, ctx := testNode(t)
	const runtimes, events = 20, 40
	var list []*owned
	for i := range runtimes {
		o := &owned{e: Entry{RuntimeID: fmt.Sprintf("n1/rt_%d", i+1), Local: fmt.Sprintf("rt_%d", i+1)}}
		n.own(o)
		list = append(list, o)
	}
	gone := &owned{e: Entry{RuntimeID: "n1/rt_gone", Local: "rt_gone"}}
	for seq := int64(1); seq <= events; seq++ {
		for _, o := range list {
			n.enqueue(ctx, o, chunk(o.e.RuntimeID, seq), seq)
		}
		n.enqueue(ctx, gone, chunk(gone.e.RuntimeID, seq), seq)
	}
	n.enqueue(ctx, list[0], chunk(list[0].e.RuntimeID, 7), 7) // published again after a reconnect
	n.drainers.Wait()

	cons, err := n.st.JS.OrderedConsumer(ctx, StreamEvents, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]int64{}
	for range runtimes * events {
		m, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			t.Fatalf("after %d events: %v", len(got), err)
		}
		var h struct {
			ID  string `json:"runtime_id"`
			Seq int64  `json:"seq"`
		}
		_ = json.Unmarshal(m.Data(), &h)
		got[h.ID] = append(got[h.ID], h.Seq)
	}
	for _, o := range list {
		seqs := got[o.e.RuntimeID]
		if len(seqs) != events {
			t.Fatalf("%s: %d events stored, want %d: %v", o.e.RuntimeID, len(seqs), events, seqs)
		}
		for i, s := range seqs {
			if s != int64(i+1) {
				t.Fatalf("%s: stored in the order %v", o.e.RuntimeID, seqs)
			}
		}
	}
	info, err := n.st.Events.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != runtimes*events {
		t.Errorf("the stream holds %d events, want %d (a repeat or a disowned runtime's stored)", info.State.Msgs, runtimes*events)
	}
}

func chunk(id string, seq int64) []byte {
	b, _ := json.Marshal(map[string]any{"event": "agent.message_chunk", "seq": seq, "runtime_id": id, "text": "x"})
	return b
}

// TestOwnerOfWaitsOnlyForEarlierSpawns: an unknown runtime's event waits
// for the spawns in flight when it came, and is found once the one that
// started it registers it; with none in flight it is not waited for.
func TestOwnerOfWaitsOnlyForEarlierSpawns(t *testing.T) {
	n := &node{byLocal: map[string]*owned{}, byFleet: map[string]*owned{}, spawning: map[chan struct{}]bool{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if o := n.ownerOf(ctx, "rt_1"); o != nil {
		t.Fatalf("no spawn in flight: got %v", o)
	}
	a, b := make(chan struct{}), make(chan struct{})
	n.spawning[a], n.spawning[b] = true, true
	found := make(chan *owned)
	go func() { found <- n.ownerOf(ctx, "rt_2") }()
	close(a) // a spawn that started another runtime ends
	o := &owned{e: Entry{RuntimeID: "n1/rt_2", Local: "rt_2"}}
	n.own(o)
	close(b)
	if got := <-found; got != o {
		t.Fatalf("ownerOf = %v, want the registered runtime", got)
	}
}

func TestPresenceKey(t *testing.T) {
	for _, tc := range []struct {
		live map[string]Presence
		want string
	}{
		{nil, ""},
		{map[string]Presence{"n2": {Instance: "b"}, "n1": {Instance: "a"}}, "n1=a,n2=b"},
		{map[string]Presence{"n1": {Instance: "c"}}, "n1=c"},
	} {
		if got := presenceKey(tc.live); got != tc.want {
			t.Errorf("presenceKey(%v) = %q, want %q", tc.live, got, tc.want)
		}
	}
}

// TestRoomFor: a node takes another spawn only while its supervisor has
// a free slot no spawn in flight here was promised, within SpawnsInFlight.
func TestRoomFor(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		capacity, active, fly int
		want                  bool
	}{
		{"idle", 8, 0, 0, true},
		{"free slots beyond those in flight", 8, 2, 3, true},
		{"every free slot promised", 8, 5, 3, false},
		{"full", 8, 8, 0, false},
		{"window full", 40, 0, SpawnsInFlight, false},
		{"capacity unknown: one at a time", 0, 0, 0, true},
		{"capacity unknown, one in flight", 0, 0, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &node{took: make(chan struct{}, 1)}
			n.took <- struct{}{} // a refusal waits for a spawn to finish: this one has
			inflight := make(chan struct{}, SpawnsInFlight)
			for range tc.fly {
				inflight <- struct{}{}
			}
			st := client.CapacityState{Available: true, Capacity: tc.capacity, Active: tc.active}
			if got := n.roomFor(context.Background(), st, inflight); got != tc.want {
				t.Errorf("roomFor(capacity %d, active %d, in flight %d) = %v, want %v", tc.capacity, tc.active, tc.fly, got, tc.want)
			}
		})
	}
}
