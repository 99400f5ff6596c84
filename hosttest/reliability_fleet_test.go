//go:build reliability

package hosttest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/avenor-go/avenor/client"
)

// FleetFailoverBound is the fail-over bound the node-kill test holds the
// fleet to: from kill -9 of a node to each of its resumable runtimes
// continuing elsewhere (presence TTL 5 s + reap interval + a pull wait +
// the respawn).
const FleetFailoverBound = 15 * time.Second

// TestReliabilityFleetNodeKill: three node agents, nine runtimes mid-turn;
// kill -9 of one node. Within FleetFailoverBound each of its runtimes
// (scripted: resumable across processes) continues on a survivor with
// avenor.fleet.moved{from,to} and contiguous seq, then completes; the
// survivors' runtimes lose nothing; the registry names one owner, the new
// one; no process the killed node started is left running.
func TestReliabilityFleetNodeKill(t *testing.T) {
	ns := natsServer(t, &server.Options{})
	w := newWorld(t)
	url := ns.ClientURL()
	nodes := map[string]*fleetNode{}
	marks := map[string]string{}
	for _, n := range []string{"n1", "n2", "n3"} {
		// Each node's processes carry its mark: the killed node's must
		// all be gone after the kill (no orphaned plugin or runtime).
		marks[n] = fmt.Sprintf("%s-%d", n, time.Now().UnixNano())
		nodes[n] = w.startNodeEnv(url, n, []string{nodeMarkEnv + "=" + marks[n]}, "--max-runtimes", "4")
	}
	_, sock := w.startFleetServe(url)
	c := fleetClient(t, sock, "n1", "n2", "n3")

	sps := spawnMany(t, c, 9, client.SpawnParams{Backend: "scripted", Prompt: "chunks 40 every=100ms"})
	victim := nodesOf(sps[:1])
	var vname string
	for n := range victim {
		vname = n
	}
	time.Sleep(time.Second) // mid-turn
	if len(markedProcs(marks[vname])) == 0 {
		t.Fatalf("no process carries node %s's mark: the orphan check would prove nothing", vname)
	}
	killed := time.Now()
	nodes[vname].signal(syscall.SIGKILL)

	var worst time.Duration
	moved := 0
	for _, sp := range sps {
		var h struct {
			Node string `json:"node"`
		}
		_ = json.Unmarshal(sp.Raw, &h)
		evs := fleetStream(t, sock, sp.RuntimeID)
		end := evs[len(evs)-1]
		var f struct {
			StopReason string `json:"stop_reason"`
			From, To   string
			TS         int64 `json:"ts"`
		}
		_ = end.Decode(&f)
		if f.StopReason != "end_turn" {
			t.Errorf("%s (node %s) ended %q: %s", sp.RuntimeID, h.Node, f.StopReason, namesOf(evs))
		}
		var mv []client.Event
		for _, ev := range evs {
			if ev.Name == "avenor.fleet.moved" {
				mv = append(mv, ev)
			}
		}
		if h.Node != vname {
			if len(mv) != 0 {
				t.Errorf("%s of survivor %s moved: %s", sp.RuntimeID, h.Node, namesOf(evs))
			}
			continue
		}
		moved++
		if len(mv) != 1 {
			t.Fatalf("%s of the killed node: %d moved events: %s", sp.RuntimeID, len(mv), namesOf(evs))
		}
		var m struct {
			From string `json:"from"`
			To   string `json:"to"`
			TS   int64  `json:"ts"`
		}
		_ = mv[0].Decode(&m)
		if m.From != vname || m.To == vname || nodes[m.To] == nil {
			t.Errorf("%s moved from %q to %q, want from %s to a survivor", sp.RuntimeID, m.From, m.To, vname)
		}
		took := time.UnixMilli(m.TS).Sub(killed)
		worst = max(worst, took)
		if took > FleetFailoverBound {
			t.Errorf("%s continued %v after the kill, bound %v", sp.RuntimeID, took, FleetFailoverBound)
		}
		// One owner: the registry (through status) names the new node.
		rt := runtimeOf(t, c, sp.RuntimeID)
		var own struct {
			Node string `json:"node"`
		}
		_ = json.Unmarshal(rt.Raw, &own)
		if own.Node != m.To {
			t.Errorf("%s: status answers from node %q, moved to %q", sp.RuntimeID, own.Node, m.To)
		}
	}
	if moved == 0 {
		t.Fatal("the killed node ran none of the runtimes")
	}
	requireNoMarked(t, marks[vname], 10*time.Second)
	t.Logf("kill -9 of %s: %d runtimes moved, slowest continued %v after the kill (bound %v); 0 events lost", vname, moved, worst.Round(time.Millisecond), FleetFailoverBound)
}

// natsCluster starts a 3-server JetStream cluster on loopback in the test
// process, each server routed to all three. A clustered server is ready
// only with its peers, so all three start before any is waited for.
func natsCluster(t *testing.T) []*server.Server {
	t.Helper()
	var routes []*url.URL
	var ports []int
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
		routes = append(routes, &url.URL{Scheme: "nats", Host: ln.Addr().String()})
	}
	var out []*server.Server
	for i := range 3 {
		s, err := server.NewServer(&server.Options{ServerName: fmt.Sprintf("s%d", i+1), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true, Routes: routes,
			Cluster: server.ClusterOpts{Name: "avenor", Host: "127.0.0.1", Port: ports[i]}})
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
		out = append(out, s)
	}
	for _, s := range out {
		if !s.ReadyForConnections(30 * time.Second) {
			t.Fatalf("server %s did not start", s.Name())
		}
	}
	for _, s := range out {
		if !waitFor(30*time.Second, func() bool { return s.JetStreamIsCurrent() }) {
			t.Fatalf("server %s did not join the cluster's JetStream", s.Name())
		}
	}
	return out
}

// TestReliabilityFleetCluster: a 3-server JetStream cluster (replicas 3),
// three node agents, 90 scripted spawns through `avenor fleet serve`; one
// NATS server is shut down in the middle. Each node stays within
// --max-runtimes, every runtime completes, every fleet stream is
// contiguous, and spawns after the loss still run. The same run measures
// spawn-to-completion throughput through the fleet against one stable.
func TestReliabilityFleetCluster(t *testing.T) {
	servers := natsCluster(t)
	natsURL := clusterURL(servers)
	w := newWorld(t)
	var list []*fleetNode
	for _, n := range []string{"n1", "n2", "n3"} {
		list = append(list, w.startNode(natsURL, n, "--max-runtimes", "4", "--fleet-replicas", "3"))
	}
	_, sock := w.startFleetServe(natsURL, "--fleet-replicas", "3")
	c := fleetClient(t, sock, "n1", "n2", "n3")

	const jobs = 90
	p := client.SpawnParams{Backend: "scripted", Prompt: "chunks 5 every=20ms"}
	pw := watchPeaks(t, list...)
	start := time.Now()
	// The loss comes when a third of the spawns were answered, however
	// fast this machine runs them: the rest are queued, taken or being
	// answered while a server goes.
	lossDone := make(chan struct{})
	var answered atomic.Int32
	var lose sync.Once
	sps := spawnManyNotify(t, c, jobs, p, func() {
		if answered.Add(1) == jobs/3 {
			lose.Do(func() {
				go func() {
					defer close(lossDone)
					servers[1].Shutdown()
				}()
			})
		}
	})
	for _, sp := range sps {
		waitEnded(t, c, sp.RuntimeID, 2*time.Minute)
	}
	fleetTook := time.Since(start)
	<-lossDone
	// After the loss: spawns still run.
	after := spawnMany(t, c, 6, p)
	for _, sp := range after {
		waitEnded(t, c, sp.RuntimeID, time.Minute)
	}
	peaks := pw.finish()
	for name, pk := range peaks {
		if pk > 4 {
			t.Errorf("node %s ran %d at once, --max-runtimes 4", name, pk)
		}
	}
	lost := 0
	for _, sp := range append(sps, after...) {
		evs := fleetStream(t, sock, sp.RuntimeID)
		local := readEvents(t, sp.OnEvent)
		if len(local) != len(evs) {
			lost += len(local) - len(evs)
			t.Errorf("%s: %d events in the fleet stream, %d in the node's log", sp.RuntimeID, len(evs), len(local))
		}
	}

	// The baseline in the same run: one stable with the fleet's 12 slots.
	singleTook := w.singleStableTook(12, jobs, p, 2*time.Minute, 2*time.Minute)
	t.Logf("%d spawns to completion: fleet (3 nodes x 4, 3 NATS servers, one lost) %v = %.1f/s; one stable (12 slots) %v = %.1f/s; per node %v; peaks %v; events lost %d",
		jobs, fleetTook.Round(time.Millisecond), float64(jobs)/fleetTook.Seconds(), singleTook.Round(time.Millisecond), float64(jobs)/singleTook.Seconds(), nodesOf(sps), peaks, lost)
}

// spawnWhenFree spawns n runtimes through c at once, labelled
// label-0000 on, as a harness does with one stable: a spawn refused for
// capacity waits for a free slot (wait_for_capacity) and tries again,
// each within wait (through a fleet, the fleet queues it itself).
func spawnWhenFree(t *testing.T, c *client.Client, n int, p client.SpawnParams, label string, wait time.Duration) []client.Spawned {
	t.Helper()
	out := make([]client.Spawned, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			q := p
			q.Label = fmt.Sprintf("%s-%04d", label, i)
			for {
				out[i], errs[i] = c.Spawn(ctx, q)
				if _, full := client.AsCapacity(errs[i]); !full {
					return
				}
				if _, err := c.WaitForCapacity(ctx, "5s"); err != nil {
					errs[i] = err
					return
				}
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

// singleStableTook is the baseline a fleet is measured against: one
// stable with slots runs n spawns of p to completion (spawnWhenFree
// within spawnWait, each ended within endWait); it returns how long that
// took.
func (w *world) singleStableTook(slots, n int, p client.SpawnParams, spawnWait, endWait time.Duration) time.Duration {
	w.t.Helper()
	sc := w.startStable("single", nil, "--max-runtimes", strconv.Itoa(slots)).client()
	start := time.Now()
	for _, sp := range spawnWhenFree(w.t, sc, n, p, "single", spawnWait) {
		waitEnded(w.t, sc, sp.RuntimeID, endWait)
	}
	return time.Since(start)
}

// clusterURL is the servers' client URLs, comma-separated, as --fleet
// and --nats take them.
func clusterURL(servers []*server.Server) string {
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.ClientURL())
	}
	return strings.Join(urls, ",")
}
