package fleet

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/avenor-go/avenor/client"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Event names the fleet adds to a runtime's stream.
const (
	// EventMoved: the runtime's node was lost and it continues on another
	// (fields from, to); its seq follows the last one of the old node.
	EventMoved = "avenor.fleet.moved"
)

// publish copies the events of the node's fleet runtimes to the events
// stream, each under its fleet id and seq, de-duplicated by
// <fleet id>/<seq>. A gap (the supervisor dropped events for a slow
// subscriber) is filled from the runtime's NDJSON log, which is complete.
func (n *node) publish(ctx context.Context, sub *client.Subscription) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-sub.C():
			if !ok {
				return
			}
			n.handle(ctx, ev)
		}
	}
}

func (n *node) handle(ctx context.Context, ev client.Event) {
	if ev.RuntimeID == "" || ev.Seq == 0 {
		return // subscriber.lagged: the gap shows in the seqs
	}
	o := n.ownerOf(ctx, ev.RuntimeID)
	if o == nil || ev.Seq <= o.last {
		return
	}
	if ev.Seq > o.last+1 {
		n.fill(ctx, o, ev.Seq)
	}
	n.emit(ctx, o, ev.Raw, ev.Seq)
}

// ownerOf finds the fleet runtime of a local id. While spawns are in
// flight an unknown id may be the runtime of one of them (its events can
// come before the spawn has registered it), so it waits for those; a
// spawn started later cannot be its.
func (n *node) ownerOf(ctx context.Context, local string) *owned {
	n.mu.Lock()
	o := n.byLocal[local]
	var waits []chan struct{}
	if o == nil {
		for ch := range n.spawning {
			waits = append(waits, ch)
		}
	}
	n.mu.Unlock()
	for _, ch := range waits {
		select {
		case <-ctx.Done():
			return nil
		case <-ch:
		}
		n.mu.Lock()
		o = n.byLocal[local]
		n.mu.Unlock()
		if o != nil {
			return o
		}
	}
	return o
}

// fill publishes the events between o.last and upto from the local log.
func (n *node) fill(ctx context.Context, o *owned, upto int64) {
	f, err := os.Open(o.eventPath)
	if err != nil {
		n.log.Error("filling an event gap from the log", "runtime_id", o.e.RuntimeID, "error", err)
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var h struct {
			Seq int64 `json:"seq"`
		}
		line := sc.Bytes()
		if json.Unmarshal(line, &h) != nil || h.Seq <= o.last {
			continue
		}
		if h.Seq >= upto {
			return
		}
		n.emit(ctx, o, append([]byte(nil), line...), h.Seq)
	}
}

// fleetEvent rewrites a local event for the fleet: the fleet id, the seq
// moved by the runtime's base, and a re-raised permission's request id
// mapped back to the one raised before the move.
func fleetEvent(raw []byte, o *owned, alias requestAlias) ([]byte, int64, error) {
	m, err := decodeObject(raw)
	if err != nil {
		return nil, 0, err
	}
	seq := fleetFields(m, o.e.RuntimeID, o.e.Base, alias)
	b, err := json.Marshal(m)
	return b, seq, err
}

// requestAlias maps a moved runtime's re-raised permission (local id) to
// the id the fleet showed before the move; zero when none.
type requestAlias struct{ fleet, local string }

// fleetFields rewrites a decoded local event (or a status's permission
// object) in place for the fleet and returns its fleet seq.
func fleetFields(m map[string]any, id string, base int64, alias requestAlias) int64 {
	var local int64
	if s, ok := m["seq"].(json.Number); ok {
		local, _ = s.Int64()
	}
	seq := local + base
	m["runtime_id"], m["seq"] = id, seq
	if rid, ok := m["request_id"].(string); ok && alias.local != "" && rid == alias.local {
		m["request_id"] = alias.fleet
	}
	return seq
}

// aliasOf is o's request alias; a permission.request of a moved runtime
// that still carries the lost node's pending request sets it first.
func (n *node) aliasOf(o *owned, raw []byte) requestAlias {
	n.mu.Lock()
	defer n.mu.Unlock()
	if o.carry != "" {
		var h struct {
			Event     sdk.EventType `json:"event"`
			RequestID string        `json:"request_id"`
		}
		if json.Unmarshal(raw, &h) == nil && h.Event == sdk.EventPermissionRequest && h.RequestID != "" {
			o.permFleet, o.permLocal, o.carry = o.carry, h.RequestID, ""
		}
	}
	return requestAlias{fleet: o.permFleet, local: o.permLocal}
}

// emit rewrites one local event for the fleet and queues it on its
// runtime's outbox, which publishes it in order and then updates the
// registry on the events that change the runtime's record.
func (n *node) emit(ctx context.Context, o *owned, raw []byte, localSeq int64) {
	b, seq, err := fleetEvent(raw, o, n.aliasOf(o, raw))
	if err != nil {
		n.log.Error("an event could not be decoded", "runtime_id", o.e.RuntimeID, "error", err)
		return
	}
	n.enqueue(ctx, o, b, seq)
	o.last = localSeq
}

// publishEvent stores one fleet event; it retries (a server of the
// cluster may be gone for a moment) until ctx ends.
func (n *node) publishEvent(ctx context.Context, id string, seq int64, data []byte) bool {
	msg := &nats.Msg{Subject: eventSubject(id), Data: data, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s/%d", id, seq))
	wait := 50 * time.Millisecond
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := n.js.PublishMsg(pctx, msg)
		cancel()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		n.log.Warn("publishing an event, retrying", "runtime_id", id, "seq", seq, "error", err)
		sleep(ctx, wait)
		wait = min(2*wait, 2*time.Second)
	}
}

// track keeps the registry record in step with the runtime: session id,
// running/ended, the pending permission (raw is the fleet's event).
func (n *node) track(ctx context.Context, o *owned, raw []byte) {
	var h struct {
		Event     sdk.EventType `json:"event"`
		SessionID string        `json:"session_id"`
	}
	_ = json.Unmarshal(raw, &h)
	e := o.e
	switch h.Event {
	case sdk.EventSessionStart, sdk.EventTurnStart:
		e.Status = "running"
	case sdk.EventSessionEnd:
		e.Status = statusEnded
		e.PendingPermission, e.Permission = false, nil
	case sdk.EventPermissionRequest:
		e.PendingPermission, e.Permission = true, append(json.RawMessage(nil), raw...)
	case sdk.EventPermissionResponse:
		e.PendingPermission, e.Permission = false, nil
	default:
		if h.SessionID == "" || h.SessionID == e.SessionID {
			return
		}
	}
	if h.SessionID != "" {
		e.SessionID = h.SessionID
	}
	n.update(ctx, o, e)
}

// update writes o's record by compare-and-set. When another node holds
// the key now, this node is no longer the owner: it stops the runtime.
func (n *node) update(ctx context.Context, o *owned, e Entry) {
	for {
		rev, err := putEntry(ctx, n.st.Runtimes, e, o.rev)
		if err == nil {
			n.mu.Lock()
			o.e, o.rev = e, rev
			n.mu.Unlock()
			return
		}
		if ctx.Err() != nil {
			return
		}
		cur, crev, gerr := getEntry(ctx, n.st.Runtimes, e.RuntimeID)
		if gerr == nil && (cur.Node != n.cfg.Node || cur.Local != o.e.Local) {
			n.lost(ctx, o, cur.Node)
			return
		}
		if gerr == nil && crev != o.rev {
			o.rev = crev
			continue
		}
		n.log.Warn("updating the registry, retrying", "runtime_id", e.RuntimeID, "error", err)
		sleep(ctx, 250*time.Millisecond)
	}
}

// lost stops a runtime whose ownership went to another node (this node
// was cut off long enough to be declared lost): never two owners.
func (n *node) lost(ctx context.Context, o *owned, to string) {
	n.log.Error("the runtime moved to another node while this one was cut off; stopping it here", "runtime_id", o.e.RuntimeID, "owner", to)
	n.disown(o)
	_ = n.ctl.Cancel(ctx, o.e.Local)
}

// guard checks, every ReapInterval, that this node still owns its
// running runtimes.
func (n *node) guard(ctx context.Context) {
	every(ctx, ReapInterval, func() {
		n.mu.Lock()
		list := make([]*owned, 0, len(n.byFleet))
		for _, o := range n.byFleet {
			if o.e.Status != statusEnded {
				list = append(list, o)
			}
		}
		n.mu.Unlock()
		for _, o := range list {
			cur, _, err := getEntry(ctx, n.st.Runtimes, o.e.RuntimeID)
			if err == nil && (cur.Node != n.cfg.Node || cur.Local != o.e.Local) {
				n.lost(ctx, o, cur.Node)
			}
		}
	})
}

// reap moves one runtime of a lost node (or of this node's previous
// incarnation) here, taking it by compare-and-set: a resumable one is
// respawned with resume, the others end with an error. It reports whether
// it took a slot.
//
// Reading the whole registry grows with the fleet's runtimes, so it is
// read again only when it may hold a runtime to move: the live nodes (or
// their instances) changed since the last read that found none, or
// ReapRescan passed.
func (n *node) reap(ctx context.Context) bool {
	live, err := liveNodes(ctx, n.st.Nodes)
	if err != nil {
		return false
	}
	seen := presenceKey(live)
	if seen == n.reapSeen && time.Since(n.reapAt) < ReapRescan {
		return false
	}
	ents, revs, err := entries(ctx, n.st.Runtimes)
	if err != nil {
		return false
	}
	missed := false
	for _, e := range ents {
		if e.Status == statusEnded {
			continue
		}
		if p, ok := live[e.Node]; ok && (e.Node != n.cfg.Node || p.Instance == n.instance && n.owns(e.RuntimeID)) {
			continue
		}
		if e.Node == n.cfg.Node && n.owns(e.RuntimeID) {
			continue
		}
		took := e
		took.Node, took.Status, took.Moves = n.cfg.Node, statusStarting, e.Moves+1
		rev, err := putEntry(ctx, n.st.Runtimes, took, revs[e.RuntimeID])
		if err != nil {
			missed = true // another node took it first, or a lost server: read again
			continue
		}
		n.move(ctx, e.Node, &owned{e: took, rev: rev})
		n.reapAt = time.Time{} // there may be more: read again next time
		return true
	}
	if !missed {
		n.reapSeen, n.reapAt = seen, time.Now()
	}
	return false
}

// presenceKey names the live nodes and their instances, in order.
func presenceKey(live map[string]Presence) string {
	keys := make([]string, 0, len(live))
	for name, p := range live {
		keys = append(keys, name+"="+p.Instance)
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

func (n *node) owns(id string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.byFleet[id] != nil
}

// move continues a taken runtime here: avenor.fleet.moved, then a spawn
// that resumes its session (the interrupted turn's prompt runs again in
// it), its seq continuing the fleet stream.
func (n *node) move(ctx context.Context, from string, o *owned) {
	id := o.e.RuntimeID
	last := n.lastSeq(ctx, id)
	if !o.e.Resumable || o.e.SessionID == "" {
		n.endLost(ctx, o, last, fmt.Sprintf("node %s was lost and backend %s cannot resume a session in another process; the runtime ended", from, o.e.Backend))
		return
	}
	moved, _ := json.Marshal(map[string]any{"event": EventMoved, "seq": last + 1, "ts": time.Now().UnixMilli(),
		"runtime_id": id, "session_id": o.e.SessionID, "from": from, "to": n.cfg.Node})
	if !n.publishEvent(ctx, id, last+1, moved) {
		return
	}
	o.e.Base = last + 1
	if o.e.PendingPermission {
		// The resumed turn raises the permission again; the harness
		// answers it by the id it saw (see owned.carry).
		var p struct {
			RequestID string `json:"request_id"`
		}
		_ = json.Unmarshal(o.e.Permission, &p)
		o.carry = p.RequestID
	}
	var params map[string]any
	if err := json.Unmarshal(o.e.Spawn, &params); err != nil || params == nil {
		params = map[string]any{}
	}
	params["session_id"] = o.e.SessionID
	// The old node's paths may not exist here; this node's defaults do.
	delete(params, "on_event")
	delete(params, "sentinel_file")
	delete(params, "idempotency_key")
	if _, _, err := n.spawn(ctx, params, o); err != nil {
		n.endLost(ctx, o, last+1, fmt.Sprintf("node %s was lost and resuming the runtime on %s failed: %v", from, n.cfg.Node, err))
		return
	}
	n.log.Info("runtime moved here", "runtime_id", id, "from", from, "local", o.e.Local)
}

// endLost closes a runtime that cannot continue: avenor.error and
// session.end{stop_reason:"error"} after its last event.
func (n *node) endLost(ctx context.Context, o *owned, last int64, msg string) {
	id := o.e.RuntimeID
	now := time.Now().UnixMilli()
	errEv, _ := json.Marshal(map[string]any{"event": string(sdk.EventError), "seq": last + 1, "ts": now, "runtime_id": id,
		"session_id": o.e.SessionID, "source": "fleet", "message": msg})
	endEv, _ := json.Marshal(map[string]any{"event": string(sdk.EventSessionEnd), "seq": last + 2, "ts": now, "runtime_id": id,
		"session_id": o.e.SessionID, "stop_reason": "error"})
	// The registry says ended before the stream does: a harness that reads
	// the session.end and then asks status must find the runtime ended, not
	// routed to a node that never ran it.
	o.e.Status, o.e.PendingPermission, o.e.Permission = statusEnded, false, nil
	o.e.StopReason, o.e.Error, o.e.LastSeq = "error", msg, last+2
	if _, err := putEntry(ctx, n.st.Runtimes, o.e, o.rev); err != nil {
		n.log.Warn("recording a lost runtime's end", "runtime_id", id, "error", err)
	}
	if !n.publishEvent(ctx, id, last+1, errEv) || !n.publishEvent(ctx, id, last+2, endEv) {
		return
	}
	n.log.Error("runtime ended: its node was lost", "runtime_id", id, "reason", msg)
}

// lastSeq is the last fleet seq stored for a runtime, 0 when none.
func (n *node) lastSeq(ctx context.Context, id string) int64 {
	m, err := n.st.Events.GetLastMsgForSubject(ctx, eventSubject(id))
	if err != nil {
		if !errors.Is(err, jetstream.ErrMsgNotFound) {
			n.log.Warn("reading a runtime's last event", "runtime_id", id, "error", err)
		}
		return 0
	}
	var h struct {
		Seq int64 `json:"seq"`
	}
	_ = json.Unmarshal(m.Data, &h)
	return h.Seq
}
