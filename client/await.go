package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// AwaitPoll is how often Await re-reads the status while a session.end
// settles into a parked runtime (or into the next attempt).
const AwaitPoll = 50 * time.Millisecond

// Until values of AwaitOptions.
const (
	// UntilAttention ends Await at a pending permission request or a
	// terminal state.
	UntilAttention = "attention"
	// UntilDone ends Await at a terminal state only.
	UntilDone = "done"
)

// Phases of an ended runtime (AwaitOutcome.Phase), from its exit code.
const (
	PhaseDone    = "done"
	PhaseFailed  = "failed"
	PhaseTimeout = "timeout"
	PhaseKilled  = "killed"
)

// PhaseOf is the phase of a runtime that ended with exit code code
// (docs/run.md#exit-codes): 0 done, 124 timeout, 130 killed, anything else failed.
func PhaseOf(code int) string {
	switch code {
	case 0:
		return PhaseDone
	case 124:
		return PhaseTimeout
	case 130:
		return PhaseKilled
	}
	return PhaseFailed
}

// ErrSupervisorLost is a supervisor that went away while Await waited.
var ErrSupervisorLost = errors.New("supervisor connection lost")

// AwaitOptions configures Await. The zero value waits until attention.
type AwaitOptions struct {
	// Until is UntilAttention (the default, "") or UntilDone.
	Until string
	// OnTurnDone, when set, is called each time a turn of the runtime ended
	// and the runtime went on (a retry, a follow-up): `avenor await`'s
	// TURN-DONE line.
	OnTurnDone func(runtimeID string)
	// FinalOutput asks for the complete final_output of an ended runtime
	// (the result method; the status's, maybe truncated, when that fails).
	FinalOutput bool
	// Stop, when set, replaces Until as the judge: Await ends at the first
	// status it reads for which Stop is true, whatever the runtime's state
	// (an ended runtime Stop refuses is waited on further), with only
	// AwaitOutcome.Runtime set. Every event of the runtime has the status
	// read again within AwaitPoll, so a change an event announces (a new
	// phase) is seen; without events it is read every 20 AwaitPolls.
	// `avenor mcp`'s wait_for conditions are Stops.
	Stop func(Runtime) bool
}

// AwaitOutcome is what ended Await: a runtime needing attention (Attention
// set) or one whose run ended (Phase set).
type AwaitOutcome struct {
	RuntimeID string
	// Attention is "permission" for a pending permission request; Summary
	// is then its question, else its tool, else its request id.
	Attention string
	Summary   string
	// Phase is PhaseDone, PhaseFailed, PhaseTimeout or PhaseKilled for an
	// ended runtime; Reason its stop reason (not for PhaseDone).
	Phase  string
	Reason sdk.StopReason
	// Runtime is the runtime's last status.
	Runtime Runtime
	// FinalOutput is set when AwaitOptions.FinalOutput asked for it.
	FinalOutput string
}

// Await waits on a runtime of a stable supervisor until it needs attention
// (opts.Until) or its run ends (docs/cli.md#avenor-await). It reads the status, the
// latest history seq, subscribes from it with replay and reads the status
// again, so nothing between the first look and the stream is lost. A
// supervisor that goes away is ErrSupervisorLost; an RPC error is returned
// as it is; ctx's end is ctx.Err().
func (c *Client) Await(ctx context.Context, runtimeID string, opts AwaitOptions) (AwaitOutcome, error) {
	a := &awaiter{c: c, id: runtimeID, opts: opts}
	if a.opts.Until == "" {
		a.opts.Until = UntilAttention
	}
	return a.run(ctx)
}

type awaiter struct {
	c    *Client
	id   string
	opts AwaitOptions
}

func (a *awaiter) run(ctx context.Context) (AwaitOutcome, error) {
	if out, done, err := a.check(ctx); done || err != nil {
		return out, err
	}
	h, err := a.c.History(ctx, HistoryOptions{RuntimeID: a.id, Limit: 1})
	if err != nil {
		return AwaitOutcome{}, a.lost(ctx, err)
	}
	sub, err := a.c.Subscribe(ctx, SubscribeOptions{RuntimeID: a.id, Replay: true, AfterSeq: h.LatestSeq})
	if err != nil {
		return AwaitOutcome{}, a.lost(ctx, err)
	}
	if out, done, err := a.check(ctx); done || err != nil {
		return out, err
	}
	// settling: a session.end was written; is the runtime ended, or going
	// on (a retry)? The status says so soon after. Without one, the status
	// is still read now and then, as a safety net.
	// dirty: with a Stop, an event came since the last status read.
	settling := a.opts.Stop == nil && len(h.Events) > 0 && h.Events[len(h.Events)-1].Name == sdk.EventSessionEnd
	dirty := false
	tick := time.NewTicker(AwaitPoll)
	defer tick.Stop()
	quiet := 0
	for {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				return AwaitOutcome{}, a.lost(ctx, ErrSupervisorLost)
			}
			if a.opts.Stop != nil {
				dirty = true
				continue
			}
			switch ev.Name {
			case sdk.EventPermissionRequest:
				if a.opts.Until == UntilAttention {
					return a.attention(ev.Raw, Runtime{RuntimeID: a.id}), nil
				}
			case sdk.EventSessionEnd:
				settling = true
				if out, done, err := a.check(ctx); done || err != nil {
					return out, err
				}
			case sdk.EventRetry, sdk.EventSessionStart, sdk.EventTurnStart:
				if settling {
					settling = false
					if a.opts.OnTurnDone != nil {
						a.opts.OnTurnDone(a.id)
					}
				}
			}
		case <-tick.C:
			if quiet++; settling || dirty || quiet%20 == 0 {
				dirty = false
				if out, done, err := a.check(ctx); done || err != nil {
					return out, err
				}
			}
		case <-ctx.Done():
			return AwaitOutcome{}, ctx.Err()
		}
	}
}

// lost maps a failed call: ctx's end, an RPC error, or a lost supervisor.
func (a *awaiter) lost(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var re *RPCError
	if errors.As(err, &re) {
		return err
	}
	return ErrSupervisorLost
}

// check reads the runtime's status: a terminal state ends Await, and so
// does a pending permission with UntilAttention.
func (a *awaiter) check(ctx context.Context) (AwaitOutcome, bool, error) {
	rt, err := a.c.Runtime(ctx, a.id)
	if err != nil {
		return AwaitOutcome{}, false, a.lost(ctx, err)
	}
	if a.opts.Stop != nil {
		return AwaitOutcome{RuntimeID: a.id, Runtime: rt}, a.opts.Stop(rt), nil
	}
	// A runtime parked after its turn lists as idle (parked:true), one that
	// can take no more prompts as ended: either way its run is over.
	if rt.Status == "ended" || rt.Parked {
		return a.end(ctx, rt), true, nil
	}
	if a.opts.Until == UntilAttention && rt.PendingPermission {
		return a.attention(rt.Permission, rt), true, nil
	}
	return AwaitOutcome{}, false, nil
}

// attention is the outcome of a pending permission request.
func (a *awaiter) attention(perm json.RawMessage, rt Runtime) AwaitOutcome {
	var p struct {
		Question  string `json:"question"`
		Tool      string `json:"tool"`
		RequestID string `json:"request_id"`
	}
	_ = json.Unmarshal(perm, &p)
	summary := p.Question
	if summary == "" {
		summary = p.Tool
	}
	if summary == "" {
		summary = p.RequestID
	}
	return AwaitOutcome{RuntimeID: a.id, Attention: "permission", Summary: summary, Runtime: rt}
}

// end is the outcome of an ended runtime: its exit code maps to the phase.
func (a *awaiter) end(ctx context.Context, rt Runtime) AwaitOutcome {
	code := 1
	if rt.ExitCode != nil {
		code = *rt.ExitCode
	}
	out := AwaitOutcome{RuntimeID: a.id, Phase: PhaseOf(code), Runtime: rt}
	if out.Phase != PhaseDone {
		out.Reason = rt.StopReason
	}
	if a.opts.FinalOutput {
		text, err := a.c.Result(ctx, a.id)
		if err != nil {
			text = rt.FinalOutput
		}
		out.FinalOutput = text
	}
	return out
}

// NoRuntimeError is FindRuntime's answer when no supervisor holds a
// runtime of that run id, runtime id or label.
type NoRuntimeError struct {
	Name string
	// LastErr is the last supervisor that could not be asked (dial or
	// list failed); nil when every one answered.
	LastErr error
}

func (e *NoRuntimeError) Error() string {
	return fmt.Sprintf("no runtime with run id or label %q", e.Name)
}

// FindDialTimeout bounds dialling and listing one supervisor in FindRuntime.
const FindDialTimeout = 5 * time.Second

// FindRuntime dials the supervisors at sockets, in order, and returns a
// Client of the one that holds the runtime named name, and its entry: an
// exact run_id (or runtime_id) wins at once; else the newest runtime with
// that label (started_at, then runtime_id). warn, when set, is told of
// every losing runtime of a label collision. The caller closes the Client.
func FindRuntime(ctx context.Context, sockets []string, name string, warn func(string)) (*Client, Runtime, error) {
	type cand struct {
		c  *Client
		rt Runtime
	}
	var labelled []cand
	var conns []*Client
	closeAll := func(keep *Client) {
		for _, c := range conns {
			if c != keep {
				c.Close()
			}
		}
	}
	var lastErr error
	for _, sock := range sockets {
		dctx, cancel := context.WithTimeout(ctx, FindDialTimeout)
		c, err := Dial(dctx, sock)
		if err != nil {
			cancel()
			lastErr = fmt.Errorf("%s: %w", sock, err)
			continue
		}
		list, err := c.List(dctx)
		cancel()
		if err != nil {
			c.Close()
			lastErr = fmt.Errorf("%s: list: %w", sock, err)
			continue
		}
		conns = append(conns, c)
		for _, rt := range list {
			if rt.RunID == name || rt.RuntimeID == name {
				closeAll(c)
				return c, rt, nil
			}
			if rt.Label == name {
				labelled = append(labelled, cand{c, rt})
			}
		}
	}
	if len(labelled) == 0 {
		// A runtime id a list did not show may still be asked for by id: a
		// fleet socket routes it to the node its id names, where a list
		// asks every node and leaves out one that did not answer in time.
		for _, c := range conns {
			dctx, cancel := context.WithTimeout(ctx, FindDialTimeout)
			rt, err := c.Runtime(dctx, name)
			cancel()
			if err == nil && rt.RuntimeID == name {
				closeAll(c)
				return c, rt, nil
			}
		}
		closeAll(nil)
		return nil, Runtime{}, &NoRuntimeError{Name: name, LastErr: lastErr}
	}
	win := labelled[0]
	for _, l := range labelled[1:] {
		if l.rt.StartedAt > win.rt.StartedAt || (l.rt.StartedAt == win.rt.StartedAt && l.rt.RuntimeID > win.rt.RuntimeID) {
			win = l
		}
	}
	for _, l := range labelled {
		if l.rt.RunID != win.rt.RunID && warn != nil {
			warn(fmt.Sprintf("label collision: losing run_id %s to winner run_id %s", l.rt.RunID, win.rt.RunID))
		}
	}
	closeAll(win.c)
	return win.c, win.rt, nil
}
