package fleet

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/avenor-go/avenor/client"
)

// NodeConfig configures a node agent. Every field is required but Pool
// and Logger.
type NodeConfig struct {
	// NC and Stores are the fleet connection and its Setup.
	NC     *nats.Conn
	Stores *Stores
	// Node is the node's name (one subject token); Pool the spawn pool it
	// takes from, default DefaultPool.
	Node, Pool string
	// Socket is the node's own supervisor's control socket: the agent
	// talks to its supervisor through it only.
	Socket string
	// Logger receives the agent's diagnostics; default none.
	Logger hclog.Logger
}

// owned is a runtime this node runs for the fleet.
type owned struct {
	e   Entry
	rev uint64
	// last is the last local seq queued for publishing (out).
	last      int64
	eventPath string
	// carry is the request id of the permission that was pending when
	// the runtime's node was lost: the resumed turn raises it again,
	// perhaps under a new id (permLocal), and the fleet keeps showing and
	// accepting the id the harness saw (permFleet). Guarded by node.mu.
	carry, permFleet, permLocal string
	// out holds its events on their way to the events stream.
	out outbox
}

// node is a running node agent.
type node struct {
	cfg      NodeConfig
	log      hclog.Logger
	js       jetstream.JetStream
	st       *Stores
	ctl      *client.Client
	instance string

	mu      sync.Mutex
	byLocal map[string]*owned
	byFleet map[string]*owned
	// spawning holds a channel per spawn in flight, closed once it has
	// registered its runtime: the publisher holds an unknown runtime's
	// events until the spawns in flight when it arrived are done.
	spawning map[chan struct{}]bool
	// claiming holds the claim keys of the spawns this node is taking now:
	// a claim of this node's instance not among them is one it failed to
	// remove, and it takes the spawn over instead of waiting on itself.
	claiming map[string]bool
	// reapSeen and reapAt are the live nodes when the registry was last
	// read for runtimes to move, and when (pull's goroutine only).
	reapSeen string
	reapAt   time.Time
	// took is signalled when a spawn taken from the queue is done.
	took chan struct{}

	// window holds a token per event publish in flight (PublishWindow);
	// drainers counts the outboxes' goroutines.
	window   chan struct{}
	drainers sync.WaitGroup
}

// RunNode runs a node agent until ctx ends or the supervisor goes away:
// it joins the fleet (presence), takes spawns from the pool's queue while
// the supervisor has a free slot, publishes its runtimes' events, answers
// routed calls, and moves the runtimes of lost nodes here.
func RunNode(ctx context.Context, cfg NodeConfig) error {
	if cfg.Pool == "" {
		cfg.Pool = DefaultPool
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if err := CheckName("--node", cfg.Node); err != nil {
		return err
	}
	if err := CheckName("--pool", cfg.Pool); err != nil {
		return err
	}
	n := &node{cfg: cfg, log: cfg.Logger.Named("fleet"), js: cfg.Stores.JS, st: cfg.Stores,
		byLocal: map[string]*owned{}, byFleet: map[string]*owned{}, instance: randomID(),
		window: make(chan struct{}, PublishWindow), spawning: map[chan struct{}]bool{}, claiming: map[string]bool{}, took: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var err error
	if n.ctl, err = client.Dial(ctx, cfg.Socket); err != nil {
		return fmt.Errorf("fleet: node %s cannot reach its supervisor at %s: %w", cfg.Node, cfg.Socket, err)
	}
	defer n.ctl.Close()
	evc, err := client.Dial(ctx, cfg.Socket)
	if err != nil {
		return fmt.Errorf("fleet: node %s cannot reach its supervisor at %s: %w", cfg.Node, cfg.Socket, err)
	}
	defer evc.Close()
	// Subscribed before the first spawn: every event of every runtime
	// this node starts passes here (gaps are filled from the log).
	sub, err := evc.Subscribe(ctx, client.SubscribeOptions{})
	if err != nil {
		return fmt.Errorf("fleet: subscribing to the supervisor's events: %w", err)
	}
	if err := n.join(ctx); err != nil {
		return err
	}
	defer func() {
		dctx, dcancel := context.WithTimeout(context.Background(), time.Second)
		defer dcancel()
		_ = n.st.Nodes.Delete(dctx, n.cfg.Node)
	}()
	rpc, err := cfg.NC.Subscribe(rpcSubject(cfg.Node), func(m *nats.Msg) { go n.serveRPC(ctx, m) })
	if err != nil {
		return fmt.Errorf("fleet: subscribing to %s: %w", rpcSubject(cfg.Node), err)
	}
	defer rpc.Unsubscribe()
	cons, err := n.st.Spawns.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: consumerName(cfg.Pool), FilterSubject: spawnSubject(cfg.Pool),
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: SpawnAckWait, MaxDeliver: -1,
	})
	if err != nil {
		return fmt.Errorf("fleet: creating the consumer of pool %s: %w", cfg.Pool, err)
	}
	n.log.Info("node joined the fleet", "node", cfg.Node, "pool", cfg.Pool)

	var wg sync.WaitGroup
	run := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); defer cancel(); f(ctx) }()
	}
	run(n.presence)
	run(func(ctx context.Context) { n.publish(ctx, sub) })
	run(func(ctx context.Context) { n.pull(ctx, cons) })
	run(n.guard)
	select {
	case <-ctx.Done():
	case <-n.ctl.Done():
	}
	cancel()
	wg.Wait()
	n.drainers.Wait()
	return nil
}

// join waits for a previous instance's presence to expire (a node that
// restarts under its name), then claims the name.
func (n *node) join(ctx context.Context) error {
	b, _ := json.Marshal(Presence{Node: n.cfg.Node, Pool: n.cfg.Pool, PID: os.Getpid(), Instance: n.instance, Since: time.Now().UnixMilli()})
	deadline := time.Now().Add(PresenceTTL + 2*time.Second)
	for {
		_, err := n.st.Nodes.Create(ctx, n.cfg.Node, b)
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("fleet: registering node %s: %w", n.cfg.Node, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("fleet: node name %s is live in the fleet already (another avenor stable --node %s); give this node another --node", n.cfg.Node, n.cfg.Node)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// presence refreshes the node's presence key.
func (n *node) presence(ctx context.Context) {
	b, _ := json.Marshal(Presence{Node: n.cfg.Node, Pool: n.cfg.Pool, PID: os.Getpid(), Instance: n.instance, Since: time.Now().UnixMilli()})
	every(ctx, PresenceInterval, func() {
		pctx, cancel := context.WithTimeout(ctx, PresenceInterval)
		defer cancel()
		if _, err := n.st.Nodes.Put(pctx, n.cfg.Node, b); err != nil && ctx.Err() == nil {
			n.log.Warn("refreshing the node's presence", "error", err)
		}
	})
}

// every runs fn every d until ctx ends (a tick that comes while fn runs
// waits for it, later ones are dropped, as with a time.Ticker).
func every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// pull takes spawns only while the supervisor has a free slot that no
// spawn in flight here has been promised, up to SpawnsInFlight at once:
// JetStream's delivery is the scheduler. Between pulls it moves the
// runtimes of lost nodes here (they need a slot too).
func (n *node) pull(ctx context.Context, cons jetstream.Consumer) {
	lastReap := time.Time{}
	var takes sync.WaitGroup
	defer takes.Wait()
	inflight := make(chan struct{}, SpawnsInFlight)
	for ctx.Err() == nil {
		st, err := n.ctl.WaitForCapacity(ctx, PullWait.String())
		if err != nil {
			if ctx.Err() == nil {
				n.log.Error("asking the supervisor for capacity", "error", err)
			}
			return
		}
		if !st.Available || !n.roomFor(ctx, st, inflight) {
			continue
		}
		if time.Since(lastReap) >= ReapInterval {
			lastReap = time.Now()
			if n.reap(ctx) {
				continue // a slot went to a moved runtime: ask again
			}
		}
		msg, err := cons.Next(jetstream.FetchMaxWait(PullWait))
		if err != nil {
			if !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
				n.log.Warn("pulling a spawn", "error", err)
				sleep(ctx, 250*time.Millisecond)
			}
			continue
		}
		inflight <- struct{}{}
		takes.Add(1)
		go func() {
			defer takes.Done()
			n.take(ctx, msg)
			<-inflight
			select {
			case n.took <- struct{}{}:
			default:
			}
		}()
	}
}

// roomFor reports whether the supervisor has a free slot beyond those the
// spawns in flight here will fill (some of which it may count already:
// the estimate errs on the side of fewer). When it has none, it waits
// for a spawn in flight to finish, at most PullWait.
func (n *node) roomFor(ctx context.Context, st client.CapacityState, inflight chan struct{}) bool {
	free := 1
	if st.Capacity > 0 {
		free = st.Capacity - st.Active
	}
	if len(inflight) < min(free, cap(inflight)) {
		return true
	}
	t := time.NewTimer(PullWait)
	defer t.Stop()
	select {
	case <-n.took:
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}

// spawnReply is what a fleet spawn's requester receives.
type spawnReply struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *rpcError       `json:"error,omitempty"`
}

// take starts one queued spawn: in-progress heartbeats while the
// supervisor starts it, the ack once its session is open, then the reply
// to the requester.
func (n *node) take(ctx context.Context, msg jetstream.Msg) {
	reply := spawnAnswer{inbox: msg.Headers().Get(headerReply)}
	if meta, err := msg.Metadata(); err == nil {
		reply.seq = meta.Sequence.Stream
	}
	if v := msg.Headers().Get(headerSchema); v != SchemaVersion {
		n.log.Error("refusing a spawn of another schema", "schema", v)
		_ = msg.Term()
		n.respond(reply, spawnReply{Error: &rpcError{Code: -32000, Message: fmt.Sprintf("fleet: the spawn has schema %q, node %s speaks %s: run one avenor version across the fleet", v, n.cfg.Node, SchemaVersion)}})
		return
	}
	var params map[string]any
	if err := json.Unmarshal(msg.Data(), &params); err != nil {
		_ = msg.Term()
		n.respond(reply, spawnReply{Error: &rpcError{Code: -32602, Message: "invalid params", Data: json.RawMessage(fmt.Sprintf(`{"detail":%q}`, err.Error()))}})
		return
	}
	delete(params, "pool")
	claim, ok := n.claim(ctx, msg, reply)
	if !ok {
		return
	}
	defer n.claimDone(claim)
	hb, stopHB := context.WithCancel(ctx)
	go every(hb, HeartbeatInterval, func() { _ = msg.InProgress() })
	o, raw, err := n.spawn(ctx, params, nil)
	stopHB()
	if err != nil {
		n.unclaim(claim)
		if _, ok := client.AsCapacity(err); ok || ctx.Err() != nil {
			// Full after all (a local spawn took the slot) or stopping:
			// another node, or this one later, takes it.
			_ = msg.NakWithDelay(time.Second)
			return
		}
		_ = msg.Term()
		n.respond(reply, spawnReply{Error: toRPCError(err)})
		return
	}
	result := rewriteIDs(raw, o.e.RuntimeID, n.cfg.Node)
	// The claim records the runtime before the ack: a redelivery (the ack
	// lost) answers with it instead of starting it again.
	cl := spawnClaim{Node: n.cfg.Node, Instance: n.instance, RuntimeID: o.e.RuntimeID, Result: result}
	b, _ := json.Marshal(cl)
	if _, err := n.st.Runtimes.Put(ctx, claim, b); err != nil {
		n.log.Warn("recording a started spawn", "runtime_id", o.e.RuntimeID, "error", err)
	}
	actx, cancel := context.WithTimeout(ctx, RPCTimeout)
	if err := msg.DoubleAck(actx); err == nil {
		n.unclaim(claim) // the queue holds the spawn no more
	}
	cancel()
	n.respond(reply, spawnReply{Result: result})
}

// spawnClaim is the registry record (key claimKey) a node writes by
// compare-and-set before it starts a queued spawn: a spawn redelivered
// after its node died while starting it is then not started twice.
type spawnClaim struct {
	Node     string `json:"node"`
	Instance string `json:"instance"`
	// RuntimeID and Result are set once the runtime started.
	RuntimeID string          `json:"runtime_id,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
}

// claimPrefix starts the claim keys in BucketRuntimes; no fleet id (which
// holds a '/') and no node name (no '.') starts with it.
const claimPrefix = "spawn."

func claimKey(streamSeq uint64) string { return fmt.Sprintf("%s%d", claimPrefix, streamSeq) }

// claim creates the spawn's claim. When one exists the spawn was taken
// before: its runtime started (answer with it), its node is still
// starting it (leave it to that node), or its node was lost while
// starting it — then the runtime may have run there, and it is refused,
// not run a second time. ok is false when the message was settled here.
func (n *node) claim(ctx context.Context, msg jetstream.Msg, reply spawnAnswer) (string, bool) {
	meta, err := msg.Metadata()
	if err != nil {
		n.log.Warn("a spawn without metadata", "error", err)
		_ = msg.NakWithDelay(time.Second)
		return "", false
	}
	key := claimKey(meta.Sequence.Stream)
	b, _ := json.Marshal(spawnClaim{Node: n.cfg.Node, Instance: n.instance})
	deadline := time.Now().Add(RegistryRetry)
	for {
		_, err = n.st.Runtimes.Create(ctx, key, b)
		if err == nil || errors.Is(err, jetstream.ErrKeyExists) || ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
		sleep(ctx, 250*time.Millisecond)
	}
	if err == nil {
		return key, n.claimStart(key)
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		n.log.Warn("claiming a spawn", "error", err)
		_ = msg.NakWithDelay(time.Second)
		return "", false
	}
	kve, gerr := n.st.Runtimes.Get(ctx, key)
	var cl spawnClaim
	if gerr != nil || json.Unmarshal(kve.Value(), &cl) != nil {
		_ = msg.NakWithDelay(time.Second)
		return "", false
	}
	if cl.RuntimeID != "" {
		_ = msg.Ack()
		n.unclaim(key)
		n.respond(reply, spawnReply{Result: cl.Result})
		return "", false
	}
	if cl.Node == n.cfg.Node && cl.Instance == n.instance && n.claimStart(key) {
		// This node's own claim, and no take of it is under way here: an
		// earlier take gave the spawn back but could not remove the claim
		// (its server lost), or the claim's creation was answered to a
		// connection that went away. Waiting for it would wait forever.
		n.log.Info("taking over a spawn this node had claimed", "stream_seq", meta.Sequence.Stream)
		return key, true
	}
	live, lerr := liveNodes(ctx, n.st.Nodes)
	if p, ok := live[cl.Node]; lerr != nil || ok && p.Instance == cl.Instance {
		_ = msg.NakWithDelay(SpawnAckWait)
		return "", false
	}
	n.log.Error("a spawn taken by a lost node came back; not running it twice", "node", cl.Node, "stream_seq", meta.Sequence.Stream)
	_ = msg.Term()
	n.unclaim(key)
	d, _ := json.Marshal(map[string]any{"node": cl.Node, "detail": "the runtime may have started there before the node was lost; spawn again to run it anew"})
	n.respond(reply, spawnReply{Error: &rpcError{Code: -32000, Message: fmt.Sprintf("fleet: node %s took this spawn and was lost while starting it; it is not run a second time (spawn again to run it anew)", cl.Node), Data: d}})
	return "", false
}

// claimStart marks a claim as being taken here; false when a take of it
// is under way already.
func (n *node) claimStart(key string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.claiming[key] {
		return false
	}
	n.claiming[key] = true
	return true
}

// claimDone ends a take of the claim here.
func (n *node) claimDone(key string) {
	n.mu.Lock()
	delete(n.claiming, key)
	n.mu.Unlock()
}

// unclaim removes a spawn's claim, trying again within RegistryRetry
// while the registry cannot answer (a server lost): a claim left behind
// makes the spawn's redeliveries to other nodes wait for this one.
func (n *node) unclaim(key string) {
	deadline := time.Now().Add(RegistryRetry)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), RPCTimeout)
		err := n.st.Runtimes.Delete(ctx, key)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			n.log.Warn("removing a spawn's claim", "key", key, "error", err)
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// spawn starts a runtime in the supervisor and registers it: a new one
// (moved nil) under <node>/<rt>, or a moved one under its fleet id.
func (n *node) spawn(ctx context.Context, params map[string]any, moved *owned) (*owned, json.RawMessage, error) {
	done := make(chan struct{})
	n.mu.Lock()
	n.spawning[done] = true
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.spawning, done)
		n.mu.Unlock()
		close(done)
	}()
	var raw json.RawMessage
	if err := n.ctl.Call(ctx, "spawn", params, &raw); err != nil {
		return nil, nil, err
	}
	var sp client.Spawned
	if err := json.Unmarshal(raw, &sp); err != nil {
		return nil, nil, err
	}
	rt, err := n.ctl.Runtime(ctx, sp.RuntimeID)
	if err != nil {
		return nil, nil, err
	}
	var extra struct {
		ResumeScope string `json:"resume_scope"`
	}
	_ = json.Unmarshal(rt.Raw, &extra)
	spawnRaw, _ := json.Marshal(params)
	pool, _ := params["pool"].(string)
	if pool == "" {
		pool = n.cfg.Pool
	}
	eventPath := rt.EventPath
	if eventPath == "" {
		eventPath = sp.OnEvent
	}
	if moved != nil {
		o := moved
		o.e.Node, o.e.Local, o.e.Status = n.cfg.Node, sp.RuntimeID, "running"
		o.e.Resumable = extra.ResumeScope == "cross_process"
		if sp.SessionID != "" {
			o.e.SessionID = sp.SessionID
		}
		o.eventPath, o.last = eventPath, 0
		rev, err := n.putRetry(ctx, o.e, o.rev)
		if err != nil {
			_ = n.ctl.Cancel(ctx, sp.RuntimeID)
			return nil, nil, fmt.Errorf("fleet: registering moved runtime %s: %w", o.e.RuntimeID, err)
		}
		o.rev = rev
		n.own(o)
		return o, raw, nil
	}
	o := &owned{eventPath: eventPath, e: Entry{
		RuntimeID: n.cfg.Node + "/" + sp.RuntimeID, Node: n.cfg.Node, Local: sp.RuntimeID,
		Status: "running", SessionID: sp.SessionID, Backend: rt.Backend, Pool: pool,
		Resumable: extra.ResumeScope == "cross_process", Spawn: spawnRaw,
	}}
	rev, err := n.putRetry(ctx, o.e, 0)
	if errors.Is(err, jetstream.ErrKeyExists) {
		// A previous incarnation of this node used the id: its supervisor
		// numbered from rt_1 again. The old entry is history.
		if _, old, gerr := getEntry(ctx, n.st.Runtimes, o.e.RuntimeID); gerr == nil {
			rev, err = putEntry(ctx, n.st.Runtimes, o.e, old)
		}
	}
	if err != nil {
		_ = n.ctl.Cancel(ctx, sp.RuntimeID)
		return nil, nil, fmt.Errorf("fleet: registering runtime %s: %w", o.e.RuntimeID, err)
	}
	o.rev = rev
	n.own(o)
	return o, raw, nil
}

// putRetry is putEntry that rides out a lost NATS server (the cluster
// elects a new leader within seconds): it retries transient failures for
// up to RegistryRetry. A compare-and-set conflict returns at once.
func (n *node) putRetry(ctx context.Context, e Entry, rev uint64) (uint64, error) {
	deadline := time.Now().Add(RegistryRetry)
	wait := 100 * time.Millisecond
	for {
		r, err := putEntry(ctx, n.st.Runtimes, e, rev)
		if err == nil || errors.Is(err, jetstream.ErrKeyExists) || ctx.Err() != nil || time.Now().After(deadline) {
			return r, err
		}
		n.log.Warn("writing the registry, retrying", "runtime_id", e.RuntimeID, "error", err)
		sleep(ctx, wait)
		wait = min(2*wait, 2*time.Second)
	}
}

func (n *node) own(o *owned) {
	n.mu.Lock()
	n.byLocal[o.e.Local] = o
	n.byFleet[o.e.RuntimeID] = o
	n.mu.Unlock()
}

func (n *node) disown(o *owned) {
	n.mu.Lock()
	if n.byLocal[o.e.Local] == o {
		delete(n.byLocal, o.e.Local)
	}
	if n.byFleet[o.e.RuntimeID] == o {
		delete(n.byFleet, o.e.RuntimeID)
	}
	n.mu.Unlock()
}

func (n *node) respond(to spawnAnswer, v spawnReply) {
	b, _ := json.Marshal(v)
	if to.inbox != "" {
		if err := n.cfg.NC.Publish(to.inbox, b); err != nil {
			n.log.Warn("answering a fleet spawn", "error", err)
		}
	}
	if to.seq == 0 || n.st.Replies == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), RPCTimeout)
	defer cancel()
	if _, err := n.st.Replies.Put(ctx, replyKey(to.seq), b); err != nil {
		n.log.Warn("recording a fleet spawn's answer", "stream_seq", to.seq, "error", err)
	}
}

// spawnAnswer is where a spawn's answer goes: the requester's inbox, and
// the replies bucket under the spawn's stream sequence — where a
// requester whose connection was away when the answer was published
// finds it (core NATS does not keep a message nobody listened for).
type spawnAnswer struct {
	inbox string
	seq   uint64
}

// replyKey is the replies bucket's key for the spawn at stream sequence seq.
func replyKey(seq uint64) string { return fmt.Sprintf("spawn.%d", seq) }

// rewriteIDs replaces the local runtime_id of an answer object with the
// fleet id and adds the node.
func rewriteIDs(raw json.RawMessage, fleetID, node string) json.RawMessage {
	m, err := decodeObject(raw)
	if err != nil {
		return raw
	}
	m["runtime_id"] = fleetID
	m["node"] = node
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}

func decodeObject(raw []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not an object")
	}
	return m, nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func randomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
