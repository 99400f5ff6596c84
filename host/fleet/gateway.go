package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/event"
)

// GatewayConfig configures the fleet control server. NC, Stores and
// Socket are required.
type GatewayConfig struct {
	NC     *nats.Conn
	Stores *Stores
	// Socket is the local control socket it serves (docs/control-protocol.md#transport-and-framing).
	Socket string
	// SpawnTimeout bounds how long a spawn waits for a node to start it;
	// default DefaultSpawnTimeout.
	SpawnTimeout time.Duration
	// Ready is called once the socket listens; default nothing.
	Ready func()
	// Logger receives diagnostics; default none.
	Logger hclog.Logger
}

// Gateway is the fleet control server of `avenor fleet serve`: the control
// method table on a local socket, each call routed to the node that owns
// the runtime.
type Gateway struct {
	cfg  GatewayConfig
	log  hclog.Logger
	srv  *control.Server
	wg   sync.WaitGroup
	stop chan struct{}
	once sync.Once
}

// NewGateway returns a gateway; Serve runs it.
func NewGateway(cfg GatewayConfig) *Gateway {
	if cfg.SpawnTimeout <= 0 {
		cfg.SpawnTimeout = DefaultSpawnTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	g := &Gateway{cfg: cfg, log: cfg.Logger.Named("fleet"), stop: make(chan struct{})}
	g.srv = control.NewServer(control.Config{Path: cfg.Socket, Logger: g.log, Ready: cfg.Ready})
	// The same flags as stable's table (host/stable/methods.go).
	g.srv.Handle("spawn", control.Method{Mutating: true, Concurrent: true, Handler: g.spawn})
	g.srv.Handle("list", control.Method{Handler: g.list})
	g.srv.Handle("status", control.Method{Handler: g.status})
	g.srv.Handle("result", control.Method{Handler: g.routed("result")})
	g.srv.Handle("history", control.Method{Handler: g.routed("history")})
	g.srv.Handle("subscribe", control.Method{Handler: g.subscribe})
	g.srv.Handle("cancel", control.Method{Mutating: true, Handler: g.routed("cancel")})
	g.srv.Handle("prompt", control.Method{Mutating: true, Concurrent: true, Handler: g.routed("prompt")})
	g.srv.Handle("interrupt_and_prompt", control.Method{Mutating: true, Concurrent: true, Handler: g.routed("interrupt_and_prompt")})
	// Concurrent: an answer to a runtime that is moving waits for it.
	g.srv.Handle("answer_permission", control.Method{Mutating: true, Concurrent: true, Handler: g.answerPermission})
	g.srv.Handle("shutdown", control.Method{Mutating: true, Handler: g.shutdown})
	return g
}

// Serve listens and answers until ctx ends or a shutdown call.
func (g *Gateway) Serve(ctx context.Context) error {
	if err := g.srv.Start(); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-g.stop:
	}
	err := g.srv.Close()
	g.wg.Wait()
	return err
}

// spawn queues the spawn on its pool's subject and waits for the node
// that starts it to answer.
func (g *Gateway) spawn(ctx context.Context, c *control.Call) (any, error) {
	var params map[string]any
	if err := c.Decode(&params); err != nil {
		return nil, err
	}
	if params == nil {
		params = map[string]any{}
	}
	pool, _ := params["pool"].(string)
	if pool == "" {
		pool = DefaultPool
	}
	if err := CheckName("pool", pool); err != nil {
		return nil, control.InvalidParams(err.Error())
	}
	body, err := json.Marshal(params)
	if err != nil {
		return nil, control.InvalidParams(err.Error())
	}
	inbox := g.cfg.NC.NewRespInbox()
	sub, err := g.cfg.NC.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	defer sub.Unsubscribe()
	msg := &nats.Msg{Subject: spawnSubject(pool), Data: body, Header: nats.Header{}}
	msg.Header.Set(headerReply, inbox)
	msg.Header.Set(headerSchema, SchemaVersion)
	reconnects := g.cfg.NC.Stats().Reconnects
	pctx, cancel := context.WithTimeout(ctx, RPCTimeout)
	ack, err := g.cfg.Stores.JS.PublishMsg(pctx, msg)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("fleet: queueing the spawn on %s: %w", spawnSubject(pool), err)
	}
	wctx, cancel := context.WithTimeout(ctx, g.cfg.SpawnTimeout)
	defer cancel()
	data, err := g.awaitAnswer(wctx, sub, ack.Sequence, reconnects)
	if err != nil {
		if ctx.Err() == nil {
			return nil, fmt.Errorf("fleet: no node of pool %s started the spawn within %v (it stays queued and may still start; are nodes of the pool running with free slots? `avenor control list` shows the fleet)", pool, g.cfg.SpawnTimeout)
		}
		return nil, ctx.Err()
	}
	var rep spawnReply
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("fleet: a node answered the spawn with %q: %w", data, err)
	}
	if rep.Error != nil {
		return nil, controlError(rep.Error)
	}
	return rep.Result, nil
}

// awaitAnswer waits for the answer to the spawn at stream sequence seq:
// on the inbox, or in the replies bucket — read at once after this
// connection reconnected (an answer sent while it was away is not kept by
// core NATS), and otherwise every ReplyCheckFirst, doubling to
// ReplyCheckMax, for an answer sent while the cluster moved this
// connection's interest.
func (g *Gateway) awaitAnswer(ctx context.Context, sub *nats.Subscription, seq uint64, reconnects uint64) ([]byte, error) {
	every := ReplyCheckFirst
	next := time.Now().Add(every)
	for {
		wait, cancel := context.WithTimeout(ctx, time.Second)
		m, err := sub.NextMsgWithContext(wait)
		cancel()
		if err == nil {
			return m.Data, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		now := g.cfg.NC.Stats().Reconnects
		if now == reconnects && time.Now().Before(next) {
			continue
		}
		reconnects = now
		every = min(2*every, ReplyCheckMax)
		next = time.Now().Add(every)
		if g.cfg.Stores.Replies == nil {
			continue
		}
		e, err := g.cfg.Stores.Replies.Get(ctx, replyKey(seq))
		if err == nil {
			return e.Value(), nil
		}
	}
}

// controlError is a node's error as the fleet socket answers it.
func controlError(e *rpcError) error {
	ce := &control.Error{Code: e.Code, Message: e.Message}
	if len(e.Data) > 0 {
		ce.Data = e.Data
	}
	return ce
}

// list is every live node's runtimes, in id order.
func (g *Gateway) list(ctx context.Context, _ *control.Call) (any, error) {
	live, err := liveNodes(ctx, g.cfg.Stores.Nodes)
	if err != nil {
		return nil, fmt.Errorf("fleet: reading the nodes: %w", err)
	}
	type item struct {
		id  string
		raw json.RawMessage
	}
	var all []item
	for name := range live {
		raw, err := g.call(ctx, name, "list", nil)
		if err != nil {
			g.log.Warn("a node did not answer list", "node", name, "error", err)
			continue
		}
		var rts []json.RawMessage
		if json.Unmarshal(raw, &rts) != nil {
			continue
		}
		for _, r := range rts {
			var h struct {
				ID string `json:"runtime_id"`
			}
			_ = json.Unmarshal(r, &h)
			all = append(all, item{h.ID, r})
		}
	}
	sort.Slice(all, func(i, j int) bool { return lessID(all[i].id, all[j].id) })
	out := make([]json.RawMessage, 0, len(all))
	for _, it := range all {
		out = append(out, it.raw)
	}
	return out, nil
}

// status answers a runtime's entry from its node; without runtime_id, the
// fleet's summary.
func (g *Gateway) status(ctx context.Context, c *control.Call) (any, error) {
	var p struct {
		RuntimeID string `json:"runtime_id"`
	}
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	if p.RuntimeID != "" {
		return g.route(ctx, "status", c)
	}
	live, err := liveNodes(ctx, g.cfg.Stores.Nodes)
	if err != nil {
		return nil, fmt.Errorf("fleet: reading the nodes: %w", err)
	}
	ents, _, err := entries(ctx, g.cfg.Stores.Runtimes)
	if err != nil {
		return nil, fmt.Errorf("fleet: reading the registry: %w", err)
	}
	names := make([]string, 0, len(live))
	for n := range live {
		names = append(names, n)
	}
	sort.Strings(names)
	active := 0
	for _, e := range ents {
		if e.Status != statusEnded {
			active++
		}
	}
	return map[string]any{"fleet": true, "schema": SchemaVersion, "socket": g.cfg.Socket, "nodes": names,
		"runtimes": len(ents), "active": active}, nil
}

func (g *Gateway) routed(method string) control.Handler {
	return func(ctx context.Context, c *control.Call) (any, error) { return g.route(ctx, method, c) }
}

// route sends a per-runtime call to the runtime's owner.
func (g *Gateway) route(ctx context.Context, method string, c *control.Call) (any, error) {
	params, id, err := runtimeCall(c)
	if err != nil {
		return nil, err
	}
	e, err := g.resolve(ctx, id)
	if err != nil {
		return nil, err
	}
	params["runtime_id"] = e.RuntimeID
	raw, err := g.call(ctx, e.Node, method, params)
	if err != nil {
		if method == "status" && e.Status == statusEnded && e.StopReason != "" {
			// A runtime that ended with its lost node runs nowhere: the
			// registry is all that is left of it.
			return registryStatus(e), nil
		}
		return nil, err
	}
	return raw, nil
}

// runtimeCall decodes a per-runtime call's params and its runtime_id,
// which it requires.
func runtimeCall(c *control.Call) (map[string]any, string, error) {
	var params map[string]any
	if err := c.Decode(&params); err != nil {
		return nil, "", err
	}
	id, _ := params["runtime_id"].(string)
	if id == "" {
		return nil, "", control.MissingParams("runtime_id")
	}
	return params, id, nil
}

// registryStatus is the status entry of a runtime that no node runs: one
// that ended when its node was lost.
func registryStatus(e Entry) map[string]any {
	return map[string]any{"runtime_id": e.RuntimeID, "node": e.Node, "session_id": e.SessionID, "backend": e.Backend,
		"status": statusEnded, "phase": "ended", "stop_reason": string(e.StopReason), "error": e.Error,
		"pending_permission": false, "permission": nil, "parked": false, "latest_seq": e.LastSeq, "pool": e.Pool}
}

// answerPermission routes an answer to the runtime's owner. When the
// registry still holds the asked request as pending but the owner cannot
// take the answer yet — its node was lost and the runtime is moving, so
// the resumed turn has not raised the request again — it waits up to
// PermissionMoveWait and tries again: the harness answers by the id it
// saw, once, whenever it decides.
func (g *Gateway) answerPermission(ctx context.Context, c *control.Call) (any, error) {
	params, id, err := runtimeCall(c)
	if err != nil {
		return nil, err
	}
	asked, _ := params["request_id"].(string)
	deadline := time.Now().Add(PermissionMoveWait)
	for {
		e, err := g.resolve(ctx, id)
		if err != nil {
			return nil, err
		}
		params["runtime_id"] = e.RuntimeID
		raw, err := g.call(ctx, e.Node, "answer_permission", params)
		if err == nil {
			return raw, nil
		}
		if !pendingIn(e, asked) || time.Now().After(deadline) || ctx.Err() != nil {
			return nil, err
		}
		g.log.Debug("the runtime is moving; the answer waits", "runtime_id", e.RuntimeID, "request_id", asked, "error", err)
		sleep(ctx, 250*time.Millisecond)
	}
}

// pendingIn reports whether a registry entry holds request id as its
// pending permission.
func pendingIn(e Entry, id string) bool {
	if !e.PendingPermission || id == "" || e.Status == statusEnded {
		return false
	}
	var p struct {
		RequestID string `json:"request_id"`
	}
	return json.Unmarshal(e.Permission, &p) == nil && p.RequestID == id
}

// resolve finds a runtime's registry entry: a fleet id <node>/rt_N, or a
// bare rt_N when exactly one node has it.
func (g *Gateway) resolve(ctx context.Context, id string) (Entry, error) {
	kv := g.cfg.Stores.Runtimes
	if !strings.Contains(id, "/") {
		keys, err := readAgain(ctx, func(ctx context.Context) ([]string, error) { return kv.Keys(ctx) })
		if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
			return Entry{}, fmt.Errorf("fleet: reading the registry: %w", err)
		}
		var hits []string
		for _, k := range keys {
			if strings.HasSuffix(k, "/"+id) && !strings.HasPrefix(k, claimPrefix) {
				hits = append(hits, k)
			}
		}
		switch len(hits) {
		case 0:
			return Entry{}, controlError(notFound(id, ""))
		case 1:
			id = hits[0]
		default:
			sort.Strings(hits)
			return Entry{}, control.InvalidParams(fmt.Sprintf("runtime id %s is ambiguous in the fleet (%s): name it as <node>/%s", id, strings.Join(hits, ", "), id))
		}
	}
	e, err := readAgain(ctx, func(ctx context.Context) (Entry, error) {
		e, _, err := getEntry(ctx, kv, id)
		return e, err
	})
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Entry{}, controlError(notFound(id, ""))
	}
	return e, err
}

// call sends one request to a node and returns its result or error.
func (g *Gateway) call(ctx context.Context, node, method string, params any) (json.RawMessage, error) {
	var raw json.RawMessage
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	body, _ := json.Marshal(rpcRequest{Method: method, Params: raw})
	rctx, cancel := context.WithTimeout(ctx, RPCTimeout)
	defer cancel()
	m, err := g.request(rctx, node, method, body)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("fleet: node %s does not answer (lost or restarting; its resumable runtimes move to other nodes within %v)", node, PresenceTTL+ReapInterval)
		}
		return nil, fmt.Errorf("fleet: node %s: %w", node, err)
	}
	var resp rpcResponse
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return nil, fmt.Errorf("fleet: node %s answered %q: %w", node, m.Data, err)
	}
	if resp.Error != nil {
		return nil, controlError(resp.Error)
	}
	return resp.Result, nil
}

// readOnly are the routed methods that change nothing on the node, so a
// request whose reply is lost may simply be sent again.
var readOnly = map[string]bool{"list": true, "status": true, "result": true, "history": true}

// request sends one request to a node. A read-only one is sent again when
// its reply does not come within ReadAttemptTimeout: a reply in flight when
// a NATS server of the cluster goes away is lost, and without a second try
// the caller would wait out the whole RPCTimeout for it.
func (g *Gateway) request(ctx context.Context, node, method string, body []byte) (*nats.Msg, error) {
	if !readOnly[method] {
		return g.cfg.NC.RequestWithContext(ctx, rpcSubject(node), body)
	}
	return readAgain(ctx, func(ctx context.Context) (*nats.Msg, error) {
		return g.cfg.NC.RequestWithContext(ctx, rpcSubject(node), body)
	})
}

// readAgain runs a read-only request, within ReadAttemptTimeout a try, and
// again when a try got no reply: a reply in flight when a NATS server of the
// cluster goes away is lost — a node's answer as much as the registry's —
// and without another try the caller would get a timeout for a fleet that
// is still there. It stops when ctx ends or a try fails otherwise.
func readAgain[T any](ctx context.Context, read func(context.Context) (T, error)) (T, error) {
	for {
		actx, cancel := context.WithTimeout(ctx, ReadAttemptTimeout)
		v, err := read(actx)
		cancel()
		lost := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
		if err == nil || !lost || ctx.Err() != nil {
			return v, err
		}
	}
}

// subscribe streams events from the events stream through an ordered
// consumer: one runtime's from after_seq (replay: the last limit), or,
// without runtime_id, every runtime's new events. Nothing is dropped for a
// slow subscriber: JetStream holds the events.
func (g *Gateway) subscribe(ctx context.Context, c *control.Call) (any, error) {
	var p struct {
		RuntimeID string `json:"runtime_id"`
		Replay    bool   `json:"replay"`
		Limit     int    `json:"limit"`
		AfterSeq  int64  `json:"after_seq"`
	}
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	if p.RuntimeID == "" && (p.Replay || p.AfterSeq > 0) {
		return nil, control.MissingParams("runtime_id")
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{eventSubjectPrefix + ">"}, DeliverPolicy: jetstream.DeliverNewPolicy}
	after := p.AfterSeq
	if p.RuntimeID != "" {
		e, err := g.resolve(ctx, p.RuntimeID)
		if err != nil {
			return nil, err
		}
		cfg.FilterSubjects = []string{eventSubject(e.RuntimeID)}
		if p.Replay || p.AfterSeq > 0 {
			cfg.DeliverPolicy = jetstream.DeliverAllPolicy
		}
		if p.Replay && p.AfterSeq == 0 {
			limit := p.Limit
			if limit <= 0 {
				limit = 64
			}
			limit = min(limit, 256)
			if m, err := g.cfg.Stores.Events.GetLastMsgForSubject(ctx, eventSubject(e.RuntimeID)); err == nil {
				var h struct {
					Seq int64 `json:"seq"`
				}
				_ = json.Unmarshal(m.Data, &h)
				after = max(0, h.Seq-int64(limit))
			}
		}
	}
	cons, err := g.cfg.Stores.JS.OrderedConsumer(ctx, StreamEvents, cfg)
	if err != nil {
		return nil, fmt.Errorf("fleet: opening the events stream: %w", err)
	}
	conn := c.Conn
	c.AfterReply(func() {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			g.forward(conn, cons, after)
		}()
	})
	return map[string]any{"subscribed": true}, nil
}

// forward sends a consumer's events to a connection until it closes.
func (g *Gateway) forward(conn *control.Conn, cons jetstream.Consumer, after int64) {
	it, err := cons.Messages()
	if err != nil {
		g.log.Error("reading the events stream", "error", err)
		return
	}
	ctx := conn.Context()
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-stopped:
		}
		it.Stop()
	}()
	defer close(stopped)
	for {
		m, err := it.Next()
		if err != nil {
			return
		}
		ev, err := decodeObject(m.Data())
		if err != nil {
			continue
		}
		if s, ok := ev["seq"].(json.Number); ok {
			if n, _ := s.Int64(); n <= after {
				continue
			}
		}
		if !conn.Notify(event.Event(ev)) {
			return
		}
	}
}

// shutdown stops every live node's supervisor, then the fleet socket.
func (g *Gateway) shutdown(ctx context.Context, c *control.Call) (any, error) {
	var params map[string]any
	if err := c.Decode(&params); err != nil {
		return nil, err
	}
	live, err := liveNodes(ctx, g.cfg.Stores.Nodes)
	if err != nil {
		return nil, fmt.Errorf("fleet: reading the nodes: %w", err)
	}
	for name := range live {
		if _, err := g.call(ctx, name, "shutdown", params); err != nil {
			g.log.Warn("a node did not take the shutdown", "node", name, "error", err)
		}
	}
	c.AfterReply(func() { g.once.Do(func() { close(g.stop) }) })
	return map[string]any{"shutting_down": true}, nil
}
