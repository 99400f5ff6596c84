package stable

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/event"
)

// MaxParentMessage bounds send_to_parent's message (contract §5.4).
const MaxParentMessage = 64 << 10

// register adds the stable methods (contract §5.4) to srv.
func (s *Supervisor) register(srv *control.Server) {
	srv.Handle("spawn", control.Method{Mutating: true, Concurrent: true, Handler: s.spawn})
	srv.Handle("list", control.Method{Handler: s.list})
	srv.Handle("status", control.Method{Handler: s.status})
	srv.Handle("result", control.Method{Handler: s.result})
	srv.Handle("history", control.Method{Handler: s.history})
	srv.Handle("subscribe", control.Method{Handler: s.subscribe})
	srv.Handle("cancel", control.Method{Mutating: true, Handler: s.cancel})
	srv.Handle("prompt", control.Method{Mutating: true, Concurrent: true, Handler: s.prompt})
	srv.Handle("interrupt_and_prompt", control.Method{Mutating: true, Concurrent: true, Handler: s.interruptAndPrompt})
	srv.Handle("answer_permission", control.Method{Mutating: true, Handler: s.answerPermission})
	srv.Handle("send_to_parent", control.Method{Handler: s.sendToParent})
	srv.Handle("tree_budget", control.Method{Handler: s.treeBudget})
	srv.Handle("shutdown", control.Method{Mutating: true, Handler: s.shutdownMethod})
}

// target is the runtime_id of the per-runtime methods.
type target struct {
	RuntimeID string `json:"runtime_id"`
}

// decodeTarget decodes p (which embeds target) and finds its runtime.
func (s *Supervisor) decodeTarget(c *control.Call, p any, t *target) (*runtime, error) {
	if err := c.Decode(p); err != nil {
		return nil, err
	}
	return s.lookup(t.RuntimeID)
}

func (s *Supervisor) list(context.Context, *control.Call) (any, error) {
	return s.Runtimes(), nil
}

// status answers a runtime's entry; without runtime_id, the supervisor's
// own summary.
func (s *Supervisor) status(_ context.Context, c *control.Call) (any, error) {
	var p target
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	if p.RuntimeID == "" {
		return s.summary(), nil
	}
	return s.Runtime(p.RuntimeID)
}

// summary is status without runtime_id: the supervisor itself.
func (s *Supervisor) summary() map[string]any {
	list, _ := s.sorted()
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
	return map[string]any{
		"supervisor": true, "run_id": s.cfg.RunID, "pid": os.Getpid(), "socket": s.cfg.SocketPath,
		"runtimes": len(list), "active": active, "parked": parked, "max_runtimes": s.cfg.MaxRuntimes,
		"connections": conns, "artifacts": s.artifacts,
	}
}

func (s *Supervisor) result(_ context.Context, c *control.Call) (any, error) {
	var p target
	rt, err := s.decodeTarget(c, &p, &p)
	if err != nil {
		return nil, err
	}
	e := rt.entry(nil)
	out := map[string]any{"runtime_id": rt.id, "final_output": "", "session_id": e["session_id"],
		"status": e["status"], "exit_code": e["exit_code"], "stop_reason": e["stop_reason"]}
	rt.mu.Lock()
	if rt.lastEnd != nil {
		if f, ok := rt.lastEnd["final_output"].(string); ok {
			out["final_output"] = f
		}
	}
	rt.mu.Unlock()
	return out, nil
}

// Bounds of history and replay (contract §5.4, §5.7).
func limit(n int) (int, error) {
	switch {
	case n < 0:
		return 0, control.InvalidParams("limit must not be negative")
	case n == 0:
		return control.DefaultHistoryLimit, nil
	default:
		return min(n, control.MaxHistoryLimit), nil
	}
}

type historyParams struct {
	target
	Limit    int   `json:"limit"`
	AfterSeq int64 `json:"after_seq"`
}

func (s *Supervisor) history(_ context.Context, c *control.Call) (any, error) {
	var p historyParams
	rt, err := s.decodeTarget(c, &p, &p.target)
	if err != nil {
		return nil, err
	}
	n, err := limit(p.Limit)
	if err != nil {
		return nil, err
	}
	if p.AfterSeq < 0 {
		return nil, control.InvalidParams("after_seq must not be negative")
	}
	latest := rt.w.LatestSeq()
	events := rt.w.History(p.AfterSeq, n)
	out := make([]event.Event, len(events))
	for i, ev := range events {
		out[i] = event.Truncate(ev, event.FinalOutputLimit)
	}
	return map[string]any{"runtime_id": rt.id, "events": out, "latest_seq": latest}, nil
}

type subscribeParams struct {
	target
	Replay   bool  `json:"replay"`
	Limit    int   `json:"limit"`
	AfterSeq int64 `json:"after_seq"`
}

// subscribe follows one runtime (runtime_id, with replay and after_seq) or
// every runtime, present and future (contract §5.7).
func (s *Supervisor) subscribe(_ context.Context, c *control.Call) (any, error) {
	var p subscribeParams
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	n, err := limit(p.Limit)
	if err != nil {
		return nil, err
	}
	if p.AfterSeq < 0 {
		return nil, control.InvalidParams("after_seq must not be negative")
	}
	if p.RuntimeID == "" {
		if p.Replay || p.AfterSeq > 0 {
			return nil, control.MissingParams("runtime_id")
		}
		a := s.subscribeAll(c.Conn.Context(), func(sub *event.Subscription) { c.Conn.Forward(nil, sub, 0) })
		c.AfterReply(a.start)
		return map[string]any{"subscribed": true}, nil
	}
	rt, err := s.lookup(p.RuntimeID)
	if err != nil {
		return nil, err
	}
	replay, sub := rt.w.SubscribeWithReplay(p.AfterSeq, n, SubscriberQueue)
	if !p.Replay {
		replay = nil
	}
	c.AfterReply(func() { c.Conn.Forward(replay, sub, p.AfterSeq) })
	return map[string]any{"subscribed": true}, nil
}

func (s *Supervisor) cancel(_ context.Context, c *control.Call) (any, error) {
	var p target
	rt, err := s.decodeTarget(c, &p, &p)
	if err != nil {
		return nil, err
	}
	rt.cancel()
	return map[string]any{"ok": true}, nil
}

type promptParams struct {
	target
	Text      *string `json:"text"`
	RequestID string  `json:"request_id"`
	KeepQueue bool    `json:"keep_queue"`
}

func (s *Supervisor) decodePrompt(c *control.Call) (*runtime, promptParams, error) {
	var p promptParams
	if err := c.Decode(&p); err != nil {
		return nil, p, err
	}
	if p.Text == nil {
		return nil, p, control.MissingParams("text")
	}
	if *p.Text == "" {
		return nil, p, control.InvalidParams("text is empty")
	}
	rt, err := s.lookup(p.RuntimeID)
	return rt, p, err
}

// prompt queues text in a running runtime, or continues a parked one.
func (s *Supervisor) prompt(ctx context.Context, c *control.Call) (any, error) {
	rt, p, err := s.decodePrompt(c)
	if err != nil {
		return nil, err
	}
	if err := rt.followUp(ctx, *p.Text, false, false); err != nil {
		return nil, err
	}
	return map[string]any{"accepted": true}, nil
}

func (s *Supervisor) interruptAndPrompt(ctx context.Context, c *control.Call) (any, error) {
	rt, p, err := s.decodePrompt(c)
	if err != nil {
		return nil, err
	}
	if err := rt.followUp(ctx, *p.Text, true, p.KeepQueue); err != nil {
		return nil, err
	}
	return map[string]any{"accepted": true}, nil
}

type answerParams struct {
	target
	RequestID string `json:"request_id"`
	OptionID  string `json:"option_id"`
	Message   string `json:"message"`
}

func (s *Supervisor) answerPermission(_ context.Context, c *control.Call) (any, error) {
	var p answerParams
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"runtime_id", p.RuntimeID}, {"request_id", p.RequestID}, {"option_id", p.OptionID}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, control.MissingParams(missing...)
	}
	rt, err := s.lookup(p.RuntimeID)
	if err != nil {
		return nil, err
	}
	a := control.BrokerAnswerer{Broker: rt.broker}
	if !a.Pending() {
		return nil, control.ErrNoPendingPermission
	}
	if err := a.Answer(p.RequestID, p.OptionID, p.Message); err != nil {
		return nil, err
	}
	return map[string]any{"accepted": true}, nil
}

type parentParams struct {
	target
	Message *string `json:"message"`
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
		return nil, control.InvalidParams(fmt.Sprintf("runtime %s has no parent: it was spawned without parent_id", child.id))
	}
	s.mu.Lock()
	parent := s.runtimes[pid]
	s.nextCQ++
	reqID := "cq_" + strconv.Itoa(s.nextCQ)
	s.mu.Unlock()
	if parent == nil {
		return nil, control.InvalidParams(fmt.Sprintf("runtime %s's parent %s is not a runtime of this supervisor (or was reaped)", child.id, pid))
	}
	ev := event.Event{"event": "child.question", "child_id": child.id, "message": *p.Message, "request_id": reqID}
	if sid := parent.session(); sid != "" {
		ev[event.KeySessionID] = sid
	}
	if _, err := parent.w.Write(ev); err != nil {
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
