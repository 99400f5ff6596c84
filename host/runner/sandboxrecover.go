package runner

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/sandbox"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Recovery with approval (docs/sandbox.md#recovery): in a run with
// --sandbox-recover, the denials a turn's tools met are gathered while it
// runs; when the turn ends, each distinct one the boundary can be widened
// for is put to a person as a permission request of kind sandbox, one at a
// time (the turn is over: no request of the runtime's is pending beside
// it). Approved ones restart the run — same session, the boundary widened
// by exactly what was approved — through Widen; rejected or unanswered
// ones leave the turn ended as it was, denied. Asking when the turn ends,
// not when the denial happens, lets the agent finish what it can and
// never stops a turn half-way for a restart.

// Bounds of recovery (docs/configuration.md#bounds).
const (
	// MaxSandboxRecoveries bounds the sandbox requests one run raises:
	// one per distinct path (or destination), at most this many; later
	// denials are not asked about.
	MaxSandboxRecoveries = 16
	// SandboxRecoverWait bounds how long a turn's end waits for a sandbox
	// request's answer, whoever is to answer it (the file handler's
	// timeout, permission.DefaultTimeout); unanswered by then, it is
	// taken as rejected.
	SandboxRecoverWait = 10 * time.Minute
)

// SandboxRequestKind is the kind field of a sandbox request's
// permission.request.
const SandboxRequestKind = "sandbox"

// Sandbox request options.
const (
	SandboxAllowOption  = "allow"
	SandboxRejectOption = "reject"
)

// SandboxRecovery is --sandbox-recover. The zero value recovers nothing:
// the run is exactly as without it.
type SandboxRecovery struct {
	// On: the run asks to widen its sandbox after a denial.
	On bool
	// CheckBackend refuses, before a session opens, a backend the run
	// cannot recover on (one that cannot resume across processes). Nil:
	// none is refused.
	CheckBackend func(sdk.BackendInfo) error
	// Take claims the widening named key for a request: false when the
	// run asked about it before (across its restarts) or asked
	// MaxSandboxRecoveries times. Nil: each runner keeps its own count.
	Take func(key string) bool
	// Widen restarts the run, on the same session, with its boundary
	// widened by ws, each approved: it is called on a goroutine of its
	// own, and returns once the fresh turn began, or why it could not (the
	// turn then ends as it would have). Nil: nothing is ever asked.
	Widen func(ws []sandbox.Widening) error
	// Wait bounds the wait for each answer; default SandboxRecoverWait.
	Wait time.Duration
}

// recoverBook holds what the turn in flight's denials could be widened
// for, until the turn ends.
type recoverBook struct {
	mu      sync.Mutex
	pending []sandbox.Widening
	seen    map[string]bool
	asked   int // requests raised, for their ids and the bound without Take
}

func newRecoverBook(rc SandboxRecovery, sb sdk.Sandbox) *recoverBook {
	if !rc.On || !sb.Active() || rc.Widen == nil {
		return nil
	}
	return &recoverBook{seen: map[string]bool{}}
}

// noteDenied gathers ev, a written avenor.sandbox.denied, for the turn's
// end: what widening would undo it (sandbox.Plan), once per key.
func (r *Runner) noteDenied(ev event.Event) {
	if r.recov == nil || ev.Type() != event.TypeSandboxDenied {
		return
	}
	op, _ := ev["op"].(string)
	path, _ := ev["path"].(string)
	dest, _ := ev["destination"].(string)
	r.SandboxDenied(op, path, dest)
}

// SandboxDenied tells a run with --sandbox-recover of a denial that did
// not reach its stream through it (the network proxy's): op with the path
// or the destination refused. The run asks about it when its turn ends.
// A run without recovery ignores it.
func (r *Runner) SandboxDenied(op, path, destination string) {
	b := r.recov
	if b == nil {
		return
	}
	w, err := sandbox.Plan(r.opts.Sandbox, op, path, destination)
	if err != nil {
		r.opts.Logger.Debug("a sandbox denial that no approval can undo", "op", op, "path", path, "destination", destination, "why", err)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.seen[w.Key()] && len(b.seen) < MaxSandboxRecoveries {
		b.seen[w.Key()] = true
		b.pending = append(b.pending, w)
	}
}

// takePending is what the turn that ended gathered, emptied.
func (b *recoverBook) takePending() []sandbox.Widening {
	b.mu.Lock()
	defer b.mu.Unlock()
	ws := b.pending
	b.pending = nil
	return ws
}

// recoverSandbox asks, when a turn ended, about the widenings its denials
// gathered, and with any approved restarts the run through Widen. stop:
// the run was restarted (out.restarted, the session goes on in a fresh
// process) or stopped meanwhile; out is then the turn's outcome.
func (r *Runner) recoverSandbox(ctx context.Context, h *sessionHost, out turnOutcome) (turnOutcome, bool) {
	if r.recov == nil || out.pluginGone || out.interrupted || ctx.Err() != nil {
		return out, false
	}
	ws := r.recov.takePending()
	if len(ws) == 0 {
		return out, false
	}
	var approved []sandbox.Widening
	for _, w := range ws {
		if ctx.Err() != nil {
			break
		}
		if take := r.opts.SandboxRecover.Take; take != nil && !take(w.Key()) {
			continue
		}
		ok, interrupted := r.askWidening(ctx, h, w)
		if interrupted { // interrupt_and_prompt: its text is the next turn
			return out, false
		}
		if ok {
			approved = append(approved, w)
		}
	}
	if ctx.Err() != nil {
		return stoppedOutcome(ctx, out), true
	}
	if len(approved) == 0 {
		return out, false
	}
	failed := make(chan error, 1)
	go func() { failed <- r.opts.SandboxRecover.Widen(approved) }()
	select {
	case <-ctx.Done(): // Restart stopped the run (ErrRestart), or a cancel did
		return stoppedOutcome(ctx, out), true
	case err := <-failed:
		if err == nil { // the fresh turn began: the run was stopped first
			<-ctx.Done()
			return stoppedOutcome(ctx, out), true
		}
		h.emit(event.Event{"event": string(event.TypeWarning), "source": "sandbox",
			"message": fmt.Sprintf("the sandbox could not be widened, the turn stays denied: %v", err)})
		return out, false
	}
}

// stoppedOutcome is out for a run stopped while it recovered: restarted
// (no session.end, the session goes on) or cancelled, timed out.
func stoppedOutcome(ctx context.Context, out turnOutcome) turnOutcome {
	out.restarted = restarting(ctx)
	if !out.restarted {
		out.stopReason, out.final = stopReasonOf(ctx), true
	}
	return out
}

// askWidening puts w to the run's permission broker as a sandbox request
// and says whether it was approved: an allow option chosen. A rejection,
// a cancelled answer, no answer within the wait, or the broker's failure
// (a file handler's timeout, --on-permission fail) is no approval, and
// never fails the run. An interrupt_and_prompt meanwhile withdraws the
// request (interrupted): the run goes on with its text.
func (r *Runner) askWidening(ctx context.Context, h *sessionHost, w sandbox.Widening) (approved, interrupted bool) {
	h.mu.Lock()
	perms := h.permissions
	h.mu.Unlock()
	if perms == nil {
		return false, false
	}
	r.recov.mu.Lock()
	r.recov.asked++
	id := "sandbox-" + r.turnPrefix + strconv.Itoa(r.recov.asked)
	r.recov.mu.Unlock()
	wait := r.opts.SandboxRecover.Wait
	if wait <= 0 {
		wait = SandboxRecoverWait
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	stopWatch := r.watchInterrupt(wctx, cancel)
	d, err := perms.Record(wctx, SandboxRequest(id, w), h.emit)(wctx)
	cancel()
	if stopWatch(err == nil) {
		return false, true
	}
	if err != nil {
		if ctx.Err() == nil {
			h.emit(event.Event{"event": string(event.TypeWarning), "source": "sandbox", "request_id": id,
				"message": fmt.Sprintf("sandbox request %s was not approved (%v): nothing was widened", id, err)})
		}
		return false, false
	}
	return d.Allowed(), false
}

// watchInterrupt cancels wctx with cancel when an interrupt_and_prompt
// arrives while a sandbox request waits. The returned stop, called once
// wctx is done, ends the watch and says whether the interrupt withdrew
// the request; when the request was decided first (decided), the
// interrupt's wake-up is handed on to the next turn instead.
func (r *Runner) watchInterrupt(wctx context.Context, cancel context.CancelFunc) (stop func(decided bool) bool) {
	var interrupted atomic.Bool
	watched := make(chan struct{})
	go func() { // owned: ends with wctx, which stop's caller has ended
		defer close(watched)
		select {
		case <-r.turns.interrupt:
			interrupted.Store(true)
			cancel()
		case <-wctx.Done():
		}
	}()
	return func(decided bool) bool {
		<-watched
		if !interrupted.Load() {
			return false
		}
		if decided {
			select {
			case r.turns.interrupt <- struct{}{}:
			default:
			}
			return false
		}
		return true
	}
}

// SandboxRequest is the permission request of kind sandbox that asks to
// widen the boundary by w (docs/sandbox.md#recovery): its fields name the
// op and the path (with allow_write, what an approval makes writable) or
// the destination. It requires a person: auto-approve and permission
// modes never answer it.
func SandboxRequest(id string, w sandbox.Widening) sdk.PermissionRequest {
	fields := map[string]any{"kind": SandboxRequestKind, "op": w.Op}
	question := ""
	if w.Destination != "" {
		fields["destination"] = w.Destination
		question = fmt.Sprintf("The sandbox refused a connection to %s. Allow it and resume the session?", w.Destination)
	} else {
		fields["path"], fields["allow_write"] = w.Path, w.AllowWrite
		question = fmt.Sprintf("The sandbox refused a %s of %s. Make %s writable and resume the session?", w.Op, w.Path, w.AllowWrite)
	}
	return sdk.PermissionRequest{
		ID: id, Tool: SandboxRequestKind, Question: question, RequiresUserInput: true, Fields: fields,
		Options: []sdk.PermissionOption{
			{ID: SandboxAllowOption, Kind: sdk.KindAllowOnce, Name: "widen the sandbox by this one thing"},
			{ID: SandboxRejectOption, Kind: sdk.KindReject, Name: "keep it denied"},
		},
	}
}
