//go:build reliability

package hosttest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/avenor-go/avenor/client"
)

// pendingPermission is a fleet runtime's pending permission as status
// shows it: the flag and the request's id.
func pendingPermission(rt client.Runtime) (bool, string) {
	var p struct {
		Pending    bool `json:"pending_permission"`
		Permission struct {
			RequestID string `json:"request_id"`
		} `json:"permission"`
		Node string `json:"node"`
	}
	_ = json.Unmarshal(rt.Raw, &p)
	return p.Pending, p.Permission.RequestID
}

func nodeOf(rt client.Runtime) string {
	var p struct {
		Node string `json:"node"`
	}
	_ = json.Unmarshal(rt.Raw, &p)
	return p.Node
}

// TestReliabilityFleetPermissionRestart: a runtime on node n2 waits on a
// permission; n2's supervisor (`avenor stable --fleet`) is killed with
// SIGKILL and started again under the same --node. The runtime continues
// with resume, its pending permission is visible through the fleet socket
// under the request id the harness saw before the kill, answering that id
// through the fleet socket reaches the runtime exactly once (a second
// answer is refused), and the turn completes.
func TestReliabilityFleetPermissionRestart(t *testing.T) {
	ns := natsServer(t, &server.Options{})
	w := newWorld(t)
	url := ns.ClientURL()
	n2 := w.startNode(url, "n2", "--max-runtimes", "2")
	_, sock := w.startFleetServe(url)
	c := fleetClient(t, sock, "n2")

	script := "say before\npermission tool=write question=\"May I write?\"\nsay after"
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Prompt: script})
	// early is answered right after the kill, while it moves: the answer
	// waits on the fleet socket until the resumed turn raises it again.
	early := spawn(t, c, client.SpawnParams{Backend: "scripted", Prompt: script})
	if !strings.HasPrefix(sp.RuntimeID, "n2/") || !strings.HasPrefix(early.RuntimeID, "n2/") {
		t.Fatalf("spawned %s and %s, want both on n2 (the only node)", sp.RuntimeID, early.RuntimeID)
	}
	earlyRT := waitRuntime(t, c, early.RuntimeID, 20*time.Second, "waiting on its permission", func(rt client.Runtime) bool {
		p, _ := pendingPermission(rt)
		return p
	})
	_, earlySeen := pendingPermission(earlyRT)
	rt := waitRuntime(t, c, sp.RuntimeID, 20*time.Second, "waiting on its permission", func(rt client.Runtime) bool {
		p, _ := pendingPermission(rt)
		return p
	})
	_, seen := pendingPermission(rt)
	if seen == "" {
		t.Fatalf("the pending permission has no request id: %s", rt.Raw)
	}
	// A second node of the pool: the runtime may continue on either.
	w.startNode(url, "n1", "--max-runtimes", "2")
	waitNodes(t, c, "n1", "n2")

	killed := time.Now()
	n2.signal(syscall.SIGKILL)
	n2.wait()
	earlyErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		earlyErr <- c.AnswerPermission(ctx, earlySeen, "allow", "", early.RuntimeID)
	}()
	w.startNode(url, "n2", "--max-runtimes", "2")

	// Visible through the fleet socket under the id the harness saw, on
	// a live node, after the move.
	// While the node is down, status answers an error: polled through.
	if !waitFor(40*time.Second, func() bool {
		var err error
		rt, err = c.Runtime(ctxT(t, 5*time.Second), sp.RuntimeID)
		p, id := pendingPermission(rt)
		return err == nil && p && id == seen
	}) {
		t.Fatalf("%s not pending on %s through the fleet within 40s of the restart: %s", sp.RuntimeID, seen, rt.Raw)
	}
	var perm struct {
		Permission struct {
			RuntimeID string `json:"runtime_id"`
		} `json:"permission"`
	}
	_ = json.Unmarshal(rt.Raw, &perm)
	if perm.Permission.RuntimeID != sp.RuntimeID {
		t.Errorf("the pending permission names runtime %q, want the fleet id %s", perm.Permission.RuntimeID, sp.RuntimeID)
	}
	var listed bool
	list, err := c.List(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list {
		if l.RuntimeID == sp.RuntimeID {
			p, id := pendingPermission(l)
			listed = p && id == seen
		}
	}
	if !listed {
		t.Errorf("list through the fleet does not show %s pending on %s", sp.RuntimeID, seen)
	}
	if err := c.AnswerPermission(ctxT(t, 30*time.Second), seen, "allow", "", sp.RuntimeID); err != nil {
		t.Fatalf("answering %s through the fleet after the restart: %v", seen, err)
	}
	if err := c.AnswerPermission(ctxT(t, 30*time.Second), seen, "allow", "", sp.RuntimeID); err == nil {
		t.Errorf("a second answer to %s was accepted: the permission must be answered exactly once", seen)
	}
	if err := <-earlyErr; err != nil {
		t.Errorf("answering %s of %s right after the kill: %v", earlySeen, early.RuntimeID, err)
	}
	checkAnsweredOnce(t, sock, early.RuntimeID)
	checkAnsweredOnce(t, sock, sp.RuntimeID)
	t.Logf("supervisor of n2 killed; permission %s pending again on %s after %v, answered once", seen, nodeOf(rt), time.Since(killed).Round(time.Millisecond))
}

// checkAnsweredOnce reads a runtime's fleet stream: one move, one
// permission.response, the answer reaching the runtime once, end_turn.
func checkAnsweredOnce(t *testing.T, sock, id string) {
	t.Helper()
	evs := fleetStream(t, sock, id)
	var responses, moved, allowed int
	var text strings.Builder
	for _, ev := range evs {
		switch ev.Name {
		case "permission.response":
			responses++
		case "avenor.fleet.moved":
			moved++
		case "agent.message_chunk":
			var m struct {
				Content struct {
					Text string `json:"text"`
				} `json:"content"`
				Delta string `json:"delta"`
			}
			_ = ev.Decode(&m)
			text.WriteString(m.Content.Text + m.Delta)
		}
	}
	allowed = strings.Count(text.String(), "permission allow (allow_once)")
	if responses != 1 || allowed != 1 || moved != 1 {
		t.Errorf("%s: %d permission.response, %d answers reaching the runtime, %d moves; want 1 each: %s", id, responses, allowed, moved, namesOf(evs))
	}
	var end struct {
		StopReason string `json:"stop_reason"`
	}
	_ = evs[len(evs)-1].Decode(&end)
	if end.StopReason != "end_turn" || !strings.HasSuffix(text.String(), "after") {
		t.Errorf("%s: the turn ended %q with text %q, want end_turn after the answer", id, end.StopReason, text.String())
	}
}

// TestReliabilityFleetLostNotResumable: runtimes whose backend resumes
// sessions only in its own process (scripted with resume scope in_process)
// cannot move when their node is lost: after kill -9 of the node, each
// ends in its fleet stream with avenor.error{source:"fleet"} naming the
// lost node and the reason, then session.end{stop_reason:"error"}; the
// registry (status through the fleet) says ended; and no process the
// killed node started (plugins, runtime children) is left behind.
func TestReliabilityFleetLostNotResumable(t *testing.T) {
	ns := natsServer(t, &server.Options{})
	w := newWorld(t)
	url := ns.ClientURL()
	inProcess := "SCRIPTED_RESUME_SCOPE=in_process"
	mark := fmt.Sprintf("lost-%d", time.Now().UnixNano())
	victim := w.startNodeEnv(url, "n1", []string{inProcess, nodeMarkEnv + "=" + mark}, "--max-runtimes", "3")
	_, sock := w.startFleetServe(url)
	c := fleetClient(t, sock, "n1")
	sps := spawnMany(t, c, 3, client.SpawnParams{Backend: "scripted", Prompt: "child 120\nchunks 100 every=100ms"})
	for _, sp := range sps {
		rt := runtimeOf(t, c, sp.RuntimeID)
		var h struct {
			ResumeScope string `json:"resume_scope"`
		}
		_ = json.Unmarshal(rt.Raw, &h)
		if h.ResumeScope != "in_process" {
			t.Fatalf("%s has resume scope %q, want in_process: %s", sp.RuntimeID, h.ResumeScope, rt.Raw)
		}
	}
	// A survivor of the pool ends them (it takes them from the registry).
	w.startNodeEnv(url, "n2", []string{inProcess}, "--max-runtimes", "3")
	waitNodes(t, c, "n1", "n2")
	time.Sleep(time.Second) // mid-turn
	if len(markedProcs(mark)) < 4 {
		t.Fatalf("the node runs %v, want its plugins and the runtimes' children", markedProcs(mark))
	}
	killed := time.Now()
	victim.signal(syscall.SIGKILL)
	victim.wait()
	for _, sp := range sps {
		evs := fleetStream(t, sock, sp.RuntimeID)
		n := len(evs)
		if n < 2 || evs[n-2].Name != "avenor.error" {
			t.Fatalf("%s ended without avenor.error before session.end: %s", sp.RuntimeID, namesOf(evs))
		}
		var e struct {
			Source  string `json:"source"`
			Message string `json:"message"`
		}
		_ = evs[n-2].Decode(&e)
		var end struct {
			StopReason string `json:"stop_reason"`
		}
		_ = evs[n-1].Decode(&end)
		if e.Source != "fleet" || !strings.Contains(e.Message, "node n1 was lost") || !strings.Contains(e.Message, "cannot resume a session in another process") {
			t.Errorf("%s: avenor.error %+v, want source fleet naming the lost node and why it cannot move", sp.RuntimeID, e)
		}
		if end.StopReason != "error" {
			t.Errorf("%s: session.end stop_reason %q, want error", sp.RuntimeID, end.StopReason)
		}
		for _, ev := range evs {
			if ev.Name == "avenor.fleet.moved" {
				t.Errorf("%s moved though its backend cannot resume elsewhere: %s", sp.RuntimeID, namesOf(evs))
			}
		}
		var st struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(runtimeOf(t, c, sp.RuntimeID).Raw, &st)
		if st.Status != "ended" {
			t.Errorf("%s: status through the fleet %q, want ended", sp.RuntimeID, st.Status)
		}
	}
	t.Logf("kill -9 of n1: %d runtimes ended with an error %v after the kill", len(sps), time.Since(killed).Round(time.Millisecond))
	requireNoMarked(t, mark, 10*time.Second)
}

// TestReliabilityFleetSpawnNotRunTwice: a node that took a spawn and died
// while starting it, before its ack, leaves the spawn in the queue; the
// redelivery must not start the runtime a second time. The dead node is
// played by the test: it pulls the spawn through the pool's consumer,
// writes the claim a node writes before it starts a runtime, and never
// acks. When JetStream redelivers the spawn to the real node n1, n1
// refuses it with an error naming the lost node, starts nothing, and the
// next spawn runs as usual.
func TestReliabilityFleetSpawnNotRunTwice(t *testing.T) {
	ns := natsServer(t, &server.Options{})
	w := newWorld(t)
	url := ns.ClientURL()
	_, sock := w.startFleetServe(url)
	c, err := client.Dial(ctxT(t, 5*time.Second), sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 2*time.Minute)
	cons, err := js.CreateOrUpdateConsumer(ctx, "AVENOR_SPAWNS_V1", jetstream.ConsumerConfig{
		Durable: "AVENOR_POOL_default_V1", FilterSubject: "avenor.spawn.default",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 15 * time.Second, MaxDeliver: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	spawned := make(chan error, 1)
	go func() {
		_, err := c.Spawn(ctx, client.SpawnParams{Backend: "scripted", Prompt: "say ran"})
		spawned <- err
	}()
	msg, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil {
		t.Fatalf("the ghost node pulling the spawn: %v", err)
	}
	meta, err := msg.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, "AVENOR_RUNTIMES_V1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, fmt.Sprintf("spawn.%d", meta.Sequence.Stream), []byte(`{"node":"ghost","instance":"0"}`)); err != nil {
		t.Fatal(err)
	}
	// The ghost is gone without an ack; a real node joins.
	n1 := w.startNode(url, "n1", "--max-runtimes", "2")
	select {
	case err := <-spawned:
		if err == nil {
			t.Fatal("the redelivered spawn was started again on n1: the runtime ran twice")
		}
		if !strings.Contains(err.Error(), "node ghost took this spawn and was lost") {
			t.Errorf("the refused spawn's error %q does not name the lost node", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("no answer to the spawn within 40s of the redelivery")
	}
	list, err := n1.client().List(ctxT(t, 5*time.Second))
	if err != nil || len(list) != 0 {
		t.Errorf("n1 runs %d runtimes (%v), want none", len(list), err)
	}
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Prompt: "say after"})
	waitEnded(t, c, sp.RuntimeID, 20*time.Second)
	if keys, _ := kv.Keys(ctx); len(keys) != 1 {
		t.Errorf("registry keys %v, want only %s (claims removed)", keys, sp.RuntimeID)
	}
}
