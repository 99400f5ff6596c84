package stable

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/event"
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
	return tableTarget{rt}, nil
}

// Snapshot is status without runtime_id.
func (m methodTable) Snapshot() any { return m.s.StatusSnapshot() }

// SubscribeAll follows every runtime, present and future (docs/control-protocol.md#subscribe).
func (m methodTable) SubscribeAll(c *control.Call) {
	a := m.s.subscribeAll(c.Conn.Context(), func(sub *event.Subscription) { c.Conn.Forward(nil, sub, 0) })
	c.AfterReply(a.start)
}

// tableTarget is one runtime as the method table serves it.
type tableTarget struct{ rt *runtime }

func (t tableTarget) ID() string            { return t.rt.id }
func (t tableTarget) Events() *event.Writer { return t.rt.run.Events() }
func (t tableTarget) Cancel()               { t.rt.cancel() }

// Status is the runtime's entry (docs/control-protocol.md#list).
func (t tableTarget) Status() any {
	_, children := t.rt.s.sorted()
	return t.rt.entry(children[t.rt.id])
}

// Result is the last session.end's final_output, with the runtime's
// session, status, exit code and stop reason.
func (t tableTarget) Result() any {
	rt := t.rt
	e := rt.entry(nil)
	out := map[string]any{"runtime_id": rt.id, "final_output": "", "session_id": e["session_id"],
		"status": e["status"], "exit_code": e["exit_code"], "stop_reason": e["stop_reason"]}
	// Lossless (docs/control-protocol.md#methods): the kept text, or the log's when the kept
	// one is cut. final_output_truncated only when the log failed us.
	final, truncated := rt.run.FinalOutput()
	out["final_output"] = final
	if truncated {
		out["final_output_truncated"] = true
	}
	return out
}

// Prompt queues text in a running runtime, or continues a parked one.
func (t tableTarget) Prompt(ctx context.Context, text string, interrupt, keepQueue bool) error {
	return t.rt.followUp(ctx, text, interrupt, keepQueue)
}

// AnswerPermission answers through the runtime's broker, which tells
// "nothing pending" (-32001) from "already answered".
func (t tableTarget) AnswerPermission(requestID, optionID, message string) error {
	return t.rt.run.AnswerPermission(requestID, optionID, message)
}

// AnswerPermissionAs implements control.SourcedTarget.
func (t tableTarget) AnswerPermissionAs(source, requestID, optionID, message string) error {
	return t.rt.run.AnswerPermissionAs(source, requestID, optionID, message)
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
	out := def.snapshot()
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
		if !ids[list[i].spec.parentID] {
			return list[i]
		}
	}
	return nil
}

// snapshot is the runtime's current (or last) run's docs/control-protocol.md#status snapshot, with
// its runtime_id, entry status and parked.
func (rt *runtime) snapshot() map[string]any {
	st := rt.run.Snapshot()
	out := map[string]any{}
	// The snapshot's own encoding keeps its keys in one place.
	b, err := json.Marshal(st)
	if err == nil {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		err = d.Decode(&out)
	}
	if err != nil {
		rt.s.log.Error("encoding a runtime's status snapshot", "runtime_id", rt.id, "error", err)
	}
	_, children := rt.s.sorted()
	e := rt.entry(children[rt.id])
	// Before its first session.start a run's snapshot may not know these.
	for _, k := range []string{"session_id", "run_id"} {
		if v, _ := out[k].(string); v == "" {
			out[k] = e[k]
		}
	}
	if v, _ := out["run_label"].(string); v == "" {
		out["run_label"] = e["label"]
	}
	out["runtime_id"], out["status"], out["parked"] = rt.id, e["status"], e["parked"]
	return out
}

// summary describes the supervisor itself; list is every runtime.
func (s *Supervisor) summary(list []*runtime) map[string]any {
	parked := 0
	for _, rt := range list {
		rt.mu.Lock()
		if rt.state == stateParked {
			parked++
		}
		rt.mu.Unlock()
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
	pid := child.spec.parentID
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
	ev := event.Event{"event": string(event.TypeChildQuestion), "child_id": child.id, "message": *p.Message, "request_id": reqID}
	if sid := parent.session(); sid != "" {
		ev[event.KeySessionID] = sid
	}
	if _, err := parent.run.Events().Write(ev); err != nil {
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
