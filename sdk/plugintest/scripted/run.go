package scripted

import (
	"encoding/json"
	"github.com/avenor-go/avenor/sdk/agentproc"

	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// dieGrace is how long die waits before killing the process.
const dieGrace = 100 * time.Millisecond

// run executes the steps of one turn.
type run struct {
	s     *session
	ctx   context.Context // cancelled by Cancel (unless ignored), Close, or the host
	turn  *turnState
	usage *runtime.Usage
	// cost is the usage step's cost=, nil when it gave none; window its
	// window=, 0 when it gave none.
	cost   *float64
	window int64
	// images came with the prompt (the images command reports them).
	images []runtime.Image
}

func (r *run) result(stop runtime.StopReason) runtime.TurnResult {
	res := runtime.TurnResult{StopReason: stop, Usage: r.usage}
	if r.usage != nil && r.cost != nil {
		res.Extra = map[string]any{"cost_usd": *r.cost}
	}
	if r.usage != nil && r.window > 0 {
		if res.Extra == nil {
			res.Extra = map[string]any{}
		}
		res.Extra[runtime.ExtraContextUsedTokens] = r.s.contextUse(r.usage.InputTokens, r.window)
		res.Extra[runtime.ExtraContextWindowTokens] = r.window
	}
	return res
}

// step runs one step. A result with a stop reason, or an error, ends the
// turn; the zero result goes on to the next step.
func (r *run) step(st Step) (runtime.TurnResult, error) {
	s := r.s
	switch st.Cmd {
	case "say":
		s.say(st.Text)
	case "think":
		s.host.Emit(runtime.ThoughtChunk(s.id, st.Text))
	case "chunks":
		for i := 1; i <= st.N; i++ {
			if i > 1 && !r.sleep(st.Duration) {
				return r.result(runtime.StopCancelled), nil
			}
			text := st.Text
			if text == "" {
				text = fmt.Sprintf("chunk %d\n", i)
			}
			s.say(text)
		}
	case "flood":
		for range st.N {
			if r.ctx.Err() != nil {
				return r.result(runtime.StopCancelled), nil
			}
			s.say("x")
		}
	case "sleep":
		if !r.sleep(st.Duration) {
			return r.result(runtime.StopCancelled), nil
		}
	case "tool":
		id := s.nextID("call")
		s.host.Emit(runtime.NewEvent(runtime.EventToolCall, map[string]any{
			"session_id": s.id, "session_update": "tool_call",
			"toolCallId": id, "title": st.Text, "kind": st.Kind, "status": "pending", "rawInput": map[string]any{},
		}))
		s.host.Emit(runtime.NewEvent(runtime.EventToolCallUpdate, map[string]any{
			"session_id": s.id, "session_update": "tool_call_update",
			"toolCallId": id, "kind": st.Kind, "status": "completed",
		}))
	case "toolproc":
		return r.toolproc(st)
	case "permission":
		return r.permission(st)
	case "question":
		return r.question(st)
	case "images":
		// What a runtime with image input would get: each file read.
		for _, im := range r.images {
			b, err := os.ReadFile(im.Path)
			if err != nil {
				return r.result(runtime.StopError), runtime.Errorf(runtime.FaultPlugin, "images: %v", err)
			}
			s.say(fmt.Sprintf("image %s %d bytes\n", im.MediaType, len(b)))
		}
		s.say(fmt.Sprintf("%d images", len(r.images)))
	case "usage":
		u := st.Usage
		r.usage, r.cost, r.window = &u, st.CostUSD, st.Window
	case "stop":
		return r.result(runtime.StopReason(st.Text)), nil
	case "fail":
		return r.result(runtime.StopError), runtime.Errorf(runtime.FaultRuntime, "%s", st.Text)
	case "ratelimit":
		return r.rateLimit(st)
	case "account":
		s.host.Emit(runtime.UsageAccount(s.id, st.Text, st.Pct, time.Now().Add(st.Duration)))
	case "error":
		// As codex reports a failure it may retry (its "error"
		// notification): an event only, the turn goes on.
		s.host.Emit(runtime.NewEvent(EventError, map[string]any{"session_id": s.id, "source": "backend", "message": st.Text}))
	case "write":
		return r.write(st)
	case "shell":
		return r.shell(st)
	case "lines":
		return r.lines(st)
	case "toolsh":
		return r.toolsh(st)
	case "child":
		if err := s.startChild(st.Duration); err != nil {
			return r.result(runtime.StopError), err
		}
	case "ignore-cancel":
		s.mu.Lock()
		r.turn.ignoreCancel = true
		s.mu.Unlock()
	case "die":
		// Give the events before it a moment to reach the host: the sdk
		// sends them asynchronously and a crash loses what is still queued.
		time.Sleep(dieGrace)
		if err := syscall.Kill(os.Getpid(), syscall.SIGKILL); err != nil {
			return r.result(runtime.StopError), runtime.Errorf(runtime.FaultPlugin, "die: %v", err)
		}
		<-r.ctx.Done() // the signal is on its way
		return r.result(runtime.StopCancelled), nil
	case "announce":
		// handled before the first step
	default:
		// Parse accepts no other command.
		return r.result(runtime.StopError), runtime.Errorf(runtime.FaultPlugin, "line %d: command %q has no implementation", st.Line, st.Cmd)
	}
	return runtime.TurnResult{}, nil
}

// rateLimit fails the turn with a rate_limited error whose reset is the
// step's, the first st.N times the session reaches a ratelimit step (its
// count is kept beside the session's turns, so a fresh plugin process
// resuming the session goes on counting); after that it does nothing.
func (r *run) rateLimit(st Step) (runtime.TurnResult, error) {
	s := r.s
	limited := false
	err := s.limits.Update(func(hits map[string]int) error {
		if hits[s.id] < st.N {
			hits[s.id]++
			limited = true
		}
		return nil
	})
	if err != nil {
		return r.result(runtime.StopError), err
	}
	if !limited {
		return runtime.TurnResult{}, nil
	}
	reset := st.ResetAt
	if reset.IsZero() {
		reset = time.Now().Add(st.Duration)
	}
	return r.result(runtime.StopError), runtime.RateLimited(reset, "scripted: rate limited until %s", reset.UTC().Format(time.RFC3339Nano))
}

// sleep waits d; false when the turn was cancelled first.
func (r *run) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.ctx.Done():
		return false
	}
}

func (r *run) permission(st Step) (runtime.TurnResult, error) {
	s := r.s
	d, err := s.host.AskPermission(r.ctx, runtime.PermissionRequest{
		ID: s.nextID("perm"), Options: st.Options, Tool: st.Tool, Question: st.Text, RequiresUserInput: st.UserInput,
	})
	if r.ctx.Err() != nil || (err == nil && d.Outcome == runtime.OutcomeCancelled) {
		s.say("permission cancelled")
		return r.result(runtime.StopCancelled), nil
	}
	if err != nil {
		return r.result(runtime.StopError), err
	}
	kind := d.Kind
	if kind == "" {
		for _, o := range st.Options {
			if o.ID == d.OptionID {
				kind = runtime.DecisionKind(o.Kind)
			}
		}
	}
	s.say(fmt.Sprintf("permission %s (%s)", d.OptionID, kind))
	return runtime.TurnResult{}, nil
}

// question asks the host and says what came back: "answer <JSON of the
// answers>", or "no answer". A cancelled turn ends cancelled.
func (r *run) question(st Step) (runtime.TurnResult, error) {
	s := r.s
	if !s.questions {
		s.say("no answer")
		return runtime.TurnResult{}, nil
	}
	a, err := runtime.AskQuestion(r.ctx, s.host, runtime.QuestionRequest{
		ID: s.nextID("question"), Prompts: st.Prompts, Fields: map[string]any{"session_id": s.id},
	})
	if r.ctx.Err() != nil {
		s.say("question cancelled")
		return r.result(runtime.StopCancelled), nil
	}
	if err != nil {
		return r.result(runtime.StopError), err
	}
	if !a.Answered {
		s.say("no answer")
		return runtime.TurnResult{}, nil
	}
	b, _ := json.Marshal(a.Answers)
	s.say("answer " + string(b))
	return runtime.TurnResult{}, nil
}

func (r *run) write(st Step) (runtime.TurnResult, error) {
	if r.s.dir == "" {
		return r.result(runtime.StopError), runtime.Errorf(runtime.FaultUser, "line %d: write: the session has no directory", st.Line)
	}
	path := filepath.Join(r.s.dir, st.Path)
	err := os.MkdirAll(filepath.Dir(path), 0o755)
	if err == nil {
		err = os.WriteFile(path, []byte(st.Text), 0o644)
	}
	if err != nil {
		return r.result(runtime.StopError), runtime.Errorf(runtime.FaultRuntime, "line %d: write: %v", st.Line, err)
	}
	return runtime.TurnResult{}, nil
}

// lines runs a command as a runtime would run: through agentproc, its
// stdout framed into bounded lines, each line one message chunk. A line over
// the bound becomes an avenor.warning and reading goes on — the turn ends.
func (r *run) lines(st Step) (runtime.TurnResult, error) {
	p, err := agentproc.Start(r.ctx, agentproc.Spec{Path: "/bin/sh", Args: []string{"-c", st.Text}, Dir: r.s.dir, Sandbox: r.s.sandbox})
	if err != nil {
		return r.result(runtime.StopError), runtime.Errorf(runtime.FaultRuntime, "line %d: lines: %v", st.Line, err)
	}
	defer p.Stop(time.Second)
	for line := range p.Lines() {
		if line.Err != nil {
			r.s.host.Emit(runtime.NewEvent(runtime.EventWarning, map[string]any{
				"source": "backend", "message": "runtime output: " + line.Err.Error(),
			}))
			continue
		}
		r.s.say(string(line.Data))
	}
	if r.ctx.Err() != nil {
		return r.result(runtime.StopCancelled), nil
	}
	return runtime.TurnResult{}, nil
}

// toolsh is a tool call whose tool is /bin/sh -c st.Text, started through
// agentproc like a runtime (inside the Open's sandbox when it has one): its
// stdout and stderr, and the launcher's own stderr, become the update's
// rawOutput, as a real runtime reports a shell tool's output.
func (r *run) toolsh(st Step) (runtime.TurnResult, error) {
	s := r.s
	id := s.nextID("call")
	s.host.Emit(runtime.NewEvent(runtime.EventToolCall, map[string]any{
		"session_id": s.id, "session_update": "tool_call",
		"toolCallId": id, "title": clip(st.Text), "kind": "execute", "status": "in_progress", "rawInput": map[string]any{"command": st.Text},
	}))
	p, err := agentproc.Start(r.ctx, agentproc.Spec{Path: "/bin/sh", Args: []string{"-c", "exec 2>&1; " + st.Text}, Dir: s.dir, Sandbox: s.sandbox})
	if err != nil {
		return r.result(runtime.StopError), runtime.Errorf(runtime.FaultRuntime, "line %d: toolsh: %v", st.Line, err)
	}
	defer p.Stop(time.Second)
	var out strings.Builder
	for line := range p.Lines() {
		if line.Err == nil && out.Len() < 64<<10 {
			out.Write(line.Data)
			out.WriteByte('\n')
		}
	}
	<-p.Done()
	if r.ctx.Err() != nil {
		return r.result(runtime.StopCancelled), nil
	}
	out.WriteString(p.StderrTail())
	status := "completed"
	if p.ExitErr() != nil {
		status = "failed"
	}
	s.host.Emit(runtime.NewEvent(runtime.EventToolCallUpdate, map[string]any{
		"session_id": s.id, "session_update": "tool_call_update",
		"toolCallId": id, "kind": "execute", "status": status, "rawOutput": map[string]any{"output": out.String()},
	}))
	return runtime.TurnResult{}, nil
}

func (r *run) shell(st Step) (runtime.TurnResult, error) {
	if r.s.sandbox.Active() {
		// Never outside the boundary asked for: lines runs inside it.
		return r.result(runtime.StopError), runtime.Errorf(runtime.FaultRuntime, "line %d: shell does not run inside a sandbox; use lines", st.Line)
	}
	cmd := exec.CommandContext(r.ctx, "/bin/sh", "-c", st.Text)
	cmd.Dir = r.s.dir
	cmd.Env = os.Environ()
	for k, v := range r.s.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// Its own process group, so cancelling reaches whatever it started.
	cmd.SysProcAttr = childSysProcAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if r.ctx.Err() != nil {
		return r.result(runtime.StopCancelled), nil
	}
	if err != nil {
		var stderr []byte
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			stderr = ee.Stderr
		}
		return r.result(runtime.StopError), runtime.Errorf(runtime.FaultRuntime, "line %d: shell %q: %v: %s", st.Line, clip(st.Text), err, clip(string(stderr)))
	}
	if len(out) > 0 {
		r.s.say(string(out))
	}
	return runtime.TurnResult{}, nil
}
