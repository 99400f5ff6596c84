package hosttest

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/fleet"
)

// natsServer starts a JetStream server on loopback inside the test
// process; it stops at the test's end (after the processes started later).
func natsServer(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	o := *opts
	o.Host, o.JetStream, o.NoSigs, o.NoLog = "127.0.0.1", true, true, true
	if o.Port == 0 {
		o.Port = -1
	}
	if o.StoreDir == "" {
		o.StoreDir = t.TempDir()
	}
	s, err := server.NewServer(&o)
	if err != nil {
		t.Fatalf("nats server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server did not start")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// fleetNode is one `avenor stable --fleet` node agent.
type fleetNode struct {
	*supervisor
	name string
}

// startNode starts a node agent and waits until the fleet sees it.
func (w *world) startNode(url, name string, args ...string) *fleetNode {
	w.t.Helper()
	return w.startNodeEnv(url, name, nil, args...)
}

// startNodeEnv is startNode with extra environment entries.
func (w *world) startNodeEnv(url, name string, extraEnv []string, args ...string) *fleetNode {
	w.t.Helper()
	s := w.startStable(name, extraEnv, append([]string{"--fleet", url, "--node", name}, args...)...)
	return &fleetNode{supervisor: s, name: name}
}

// startFleetServe starts `avenor fleet serve` and waits until it answers.
func (w *world) startFleetServe(url string, args ...string) (*proc, string) {
	w.t.Helper()
	sock := filepath.Join(w.tmp, "fleet.sock")
	p := w.start(nil, append([]string{"fleet", "serve", "--nats", url, "--control-socket", sock}, args...)...)
	if !waitFor(10*time.Second+fleet.SetupTimeout, func() bool {
		c, err := client.Dial(context.Background(), sock)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}) {
		w.t.Fatalf("avenor fleet serve did not listen: %s", p.stderr.String())
	}
	return p, sock
}

// fleetClient dials `avenor fleet serve` at sock, closed when the test
// ends, once the fleet's status names every node.
func fleetClient(t *testing.T, sock string, nodes ...string) *client.Client {
	t.Helper()
	c, err := client.Dial(ctxT(t, 5*time.Second), sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	waitNodes(t, c, nodes...)
	return c
}

// nodesJoinWait bounds how long the nodes take to join: each sets up the
// fleet's five streams and buckets, replicated three times, while a
// cluster elects their leaders; in .ci/run's reliability suite, on two
// busy cores, one node took more than 15 s.
const nodesJoinWait = time.Minute

// waitNodes waits until the fleet's status names every node.
func waitNodes(t *testing.T, c *client.Client, want ...string) {
	t.Helper()
	var got []string
	start := time.Now()
	defer func() {
		if took := time.Since(start); took > 10*time.Second {
			t.Logf("the fleet's nodes took %v to join", took.Round(time.Millisecond))
		}
	}()
	if !waitFor(nodesJoinWait, func() bool {
		var st struct {
			Nodes []string `json:"nodes"`
		}
		if err := c.Call(ctxT(t, 5*time.Second), "status", nil, &st); err != nil {
			return false
		}
		got = st.Nodes
		for _, n := range want {
			found := false
			for _, g := range got {
				found = found || g == n
			}
			if !found {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("fleet nodes %v, want %v", got, want)
	}
}

// peakWatcher samples each node's running runtimes until stopped and
// keeps the peak per node.
type peakWatcher struct {
	mu   sync.Mutex
	peak map[string]int
	stop func()
}

func watchPeaks(t *testing.T, nodes ...*fleetNode) *peakWatcher {
	pw := &peakWatcher{peak: map[string]int{}}
	clients := map[string]*client.Client{}
	for _, n := range nodes {
		clients[n.name] = n.client()
	}
	pw.stop = sampleEvery(20*time.Millisecond, func() {
		for name, c := range clients {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			var st client.CapacityState
			err := c.Call(ctx, "wait_for_capacity", map[string]any{"timeout": 0}, &st)
			cancel()
			if err == nil {
				pw.mu.Lock()
				pw.peak[name] = max(pw.peak[name], st.Active)
				pw.mu.Unlock()
			}
		}
	})
	return pw
}

func (pw *peakWatcher) finish() map[string]int {
	pw.stop()
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.peak
}

// sampleEvery calls sample now and then every d until the returned stop,
// which waits for a sample under way to end.
func sampleEvery(d time.Duration, sample func()) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			sample()
			select {
			case <-quit:
				return
			case <-time.After(d):
			}
		}
	}()
	return func() { close(quit); <-done }
}

// spawnMany spawns n runtimes through c at once and returns their ids.
func spawnMany(t *testing.T, c *client.Client, n int, p client.SpawnParams) []client.Spawned {
	t.Helper()
	return spawnManyNotify(t, c, n, p, nil)
}

// spawnManyNotify is spawnMany that calls answered (when set) as each
// spawn is answered, from the spawn's goroutine.
func spawnManyNotify(t *testing.T, c *client.Client, n int, p client.SpawnParams, answered func()) []client.Spawned {
	t.Helper()
	out := make([]client.Spawned, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := p
			q.Label = fmt.Sprintf("job-%02d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out[i], errs[i] = c.Spawn(ctx, q)
			if answered != nil {
				answered()
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("spawn %d: %v", i, err)
		}
	}
	return out
}

// fleetStream reads a runtime's whole event stream through the fleet
// socket (subscribe with replay from seq 0) until its session.end, and
// checks it: seq 1..n without gaps, every event under the fleet id.
func fleetStream(t *testing.T, sock, id string) []client.Event {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	c, err := client.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Subscribe(ctx, client.SubscribeOptions{RuntimeID: id, Replay: true, Limit: 256})
	if err != nil {
		t.Fatalf("subscribe %s: %v", id, err)
	}
	var evs []client.Event
	for {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				t.Fatalf("%s: the subscription ended after %d events", id, len(evs))
			}
			if ev.Seq != int64(len(evs)+1) {
				t.Fatalf("%s: event %d (%s) has seq %d", id, len(evs)+1, ev.Name, ev.Seq)
			}
			if ev.RuntimeID != id {
				t.Fatalf("%s: event %d has runtime_id %q", id, ev.Seq, ev.RuntimeID)
			}
			evs = append(evs, ev)
			if ev.Name == "session.end" {
				return evs
			}
		case <-ctx.Done():
			t.Fatalf("%s: no session.end within 30s; %d events: %s", id, len(evs), namesOf(evs))
		}
	}
}

func namesOf(evs []client.Event) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Name.String())
	}
	return strings.Join(s, " ")
}

// nodesOf counts the spawns per node.
func nodesOf(sps []client.Spawned) map[string]int {
	out := map[string]int{}
	for _, sp := range sps {
		var h struct {
			Node string `json:"node"`
		}
		_ = json.Unmarshal(sp.Raw, &h)
		out[h.Node]++
	}
	return out
}
