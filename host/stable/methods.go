package stable

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/event"
	hostrun "github.com/avenor-go/avenor/host/run"
)

// MaxParentMessage bounds send_to_parent's message (docs/control-protocol.md#methods).
const MaxParentMessage = 64 << 10

// register adds the control method table (docs/control-protocol.md#methods), served over the
// supervisor's runtimes, and the stable methods beside it to srv.
func (s *Supervisor) register(srv *control.Server) {
	control.RegisterTable(srv, methodTable{s}, control.TableOptions{RuntimeIDRequired: true, ConcurrentPrompts: true})
	srv.Handle("spawn", control.Method{Mutating: true, Concurrent: true, Handler: s.spawn})
	srv.Handle("list", control.Method{Handler: s.list})
	srv.Handle("send_to_parent", control.Method{Handler: s.sendToParent})
	srv.Handle("tree_budget", control.Method{Handler: s.treeBudget})
	srv.Handle("set_budget", control.Method{Mutating: true, Concurrent: true, Handler: s.setBudget})
	// Read-only: it takes no slot. Concurrent: its wait must not hold up
	// the connection's other calls.
	srv.Handle("wait_for_capacity", control.Method{Concurrent: true, Handler: s.waitForCapacity})
	srv.Handle("shutdown", control.Method{Mutating: true, Handler: s.shutdownMethod})
}

// methodTable is the supervisor as the control method table's Supervisor:
// runtimes by id, status {} its snapshot, subscribe {} every runtime.
type methodTable struct{ s *Supervisor }

// Accept takes any runtime_id: Runtime says whether it is one of ours.
func (m methodTable) Accept(*control.Call, string) error { return nil }

// Runtime finds a runtime; without an id, -32602 names runtime_id.
func (m methodTable) Runtime(id string) (control.Target, error) {
	rt, err := m.s.lookup(id)
	if err != nil {
		return nil, err
	}
	return rt.run, nil
}

// Snapshot is status without runtime_id.
func (m methodTable) Snapshot() any { return m.s.StatusSnapshot() }

// SubscribeAll follows every runtime, present and future (docs/control-protocol.md#subscribe).
func (m methodTable) SubscribeAll(c *control.Call) {
	a := m.s.subscribeAll(c.Conn.Context(), func(sub *event.Subscription) { c.Conn.Forward(nil, sub, 0) })
	c.AfterReply(a.start)
}

func (s *Supervisor) list(_ context.Context, c *control.Call) (any, error) {
	var p struct {
		// Warm lists the warm pools' ready members instead of the
		// runtimes: they are apart, since none is a runtime yet.
		Warm bool `json:"warm"`
	}
	// Params other than an object were ignored before warm pools existed
	// (a harness may send [] or null): they still are.
	if bytes.HasPrefix(c.Params, []byte("{")) {
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
	}
	if p.Warm {
		return s.warmMembers(), nil
	}
	return s.Runtimes(), nil
}

// Runtimes returns every runtime's entry, in id order (the list method).
func (s *Supervisor) Runtimes() []map[string]any {
	list, children := s.sorted()
	out := make([]map[string]any, 0, len(list))
	for _, rt := range list {
		e := rt.run.Entry()
		rt.describe(e, children[rt.id])
		out = append(out, e)
	}
	return out
}

// StatusSnapshot is status without runtime_id (docs/control-protocol.md#status): a harness
// written for one-shot `avenor run --control-socket` reads the snapshot of
// the run it started, so a supervisor answers the snapshot of its default
// runtime (see defaultRuntime) — every docs/control-protocol.md#status field, plus its runtime_id,
// status and parked — and adds its own summary beside it: supervisor,
// supervisor_run_id, supervisor_pid, socket, runtimes, active, parked_count
// (parked too, unless the snapshot's), max_runtimes, connections,
// artifacts. Where both name a field (run_id, pid) the snapshot's wins;
// the supervisor's stays under supervisor_run_id and supervisor_pid.
// Without a runtime it is the summary alone, run_id and pid the
// supervisor's.
func (s *Supervisor) StatusSnapshot() map[string]any {
	list, _ := s.sorted()
	sum := s.summary(list)
	def := defaultRuntime(list)
	if def == nil {
		return sum
	}
	out := def.run.StatusEntry()
	for k, v := range sum {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	return out
}

// defaultRuntime is the runtime status {} describes: the root runtime (its
// parent_id names no runtime of this supervisor) spawned last. A harness
// drives one runtime at a time, spawning the next when one is done, so the
// newest root is the one it is waiting on; the first would keep answering
// for a runtime long finished (or reaped, which would move the answer to
// an arbitrary survivor). Children a runtime spawns under itself
// (parent_id) never take the default from it. list is in id order.
func defaultRuntime(list []*runtime) *runtime {
	ids := make(map[string]bool, len(list))
	for _, rt := range list {
		ids[rt.id] = true
	}
	for i := len(list) - 1; i >= 0; i-- {
		if !ids[list[i].params.ParentID] {
			return list[i]
		}
	}
	return nil
}

// summary describes the supervisor itself; list is every runtime.
func (s *Supervisor) summary(list []*runtime) map[string]any {
	parked := 0
	for _, rt := range list {
		if rt.run.State() == hostrun.Parked {
			parked++
		}
	}
	s.mu.Lock()
	active, conns := s.active, s.conns
	s.mu.Unlock()
	sum := map[string]any{
		"supervisor": true, "run_id": s.cfg.RunID, "pid": os.Getpid(), "socket": s.cfg.SocketPath,
		"supervisor_run_id": s.cfg.RunID, "supervisor_pid": os.Getpid(),
		"runtimes": len(list), "active": active, "parked": parked, "parked_count": parked, "max_runtimes": s.cfg.MaxRuntimes,
		"connections": conns, "artifacts": s.artifacts,
	}
	if len(s.warm.pools) > 0 {
		sum["warm"] = s.warmSummary()
	}
	return sum
}

type parentParams struct {
	RuntimeID string  `json:"runtime_id"`
	Message   *string `json:"message"`
}

// sendToParent emits child.question into the parent runtime's stream.
func (s *Supervisor) sendToParent(_ context.Context, c *control.Call) (any, error) {
	var p parentParams
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	var missing []string
	if p.RuntimeID == "" {
		missing = append(missing, "runtime_id")
	}
	if p.Message == nil || *p.Message == "" {
		missing = append(missing, "message")
	}
	if len(missing) > 0 {
		return nil, control.MissingParams(missing...)
	}
	if len(*p.Message) > MaxParentMessage {
		return nil, control.InvalidParams(fmt.Sprintf("message is %d bytes; at most %d (64 KiB)", len(*p.Message), MaxParentMessage))
	}
	child, err := s.lookup(p.RuntimeID)
	if err != nil {
		return nil, err
	}
	pid := child.params.ParentID
	if pid == "" {
		return nil, fmt.Errorf("runtime %s has no parent: it was spawned without parent_id", child.id)
	}
	s.mu.Lock()
	parent := s.runtimes[pid]
	s.nextCQ++
	reqID := "cq_" + strconv.Itoa(s.nextCQ)
	s.mu.Unlock()
	if parent == nil {
		return nil, fmt.Errorf("runtime %s's parent %s is not a runtime of this supervisor (or was reaped)", child.id, pid)
	}
	if err := parent.run.Ask(child.id, *p.Message, reqID); err != nil {
		return nil, fmt.Errorf("runtime %s's stream: %w", pid, err)
	}
	return map[string]any{"accepted": true, "request_id": reqID}, nil
}

func (s *Supervisor) treeBudget(context.Context, *control.Call) (any, error) {
	s.mu.Lock()
	active := s.active
	s.mu.Unlock()
	return s.tree.Info(active, s.cfg.MaxRuntimes), nil
}

func (s *Supervisor) shutdownMethod(_ context.Context, c *control.Call) (any, error) {
	var p struct {
		Mode string `json:"mode"`
	}
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	switch p.Mode {
	case "":
		p.Mode = ModeGraceful
	case ModeGraceful, ModeKill, ModeImmediate:
	default:
		return nil, control.InvalidParams(fmt.Sprintf("unknown shutdown mode %q: graceful, kill or immediate", p.Mode))
	}
	mode := p.Mode
	c.AfterReply(func() { s.requestStop(ReasonShutdown, mode) })
	return map[string]any{"shutting_down": true}, nil
}
