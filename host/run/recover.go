package run

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/permission"
	hostrt "github.com/avenor-go/avenor/host/runner"
	"github.com/avenor-go/avenor/host/sentinel"
	"github.com/avenor-go/avenor/sdk/plugin"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Recovering a supervised runtime from its record after its supervisor
// died. It comes back parked with its log continued from the last seq the
// log holds: a parked one as it was (a follow-up resumes its session in a
// fresh plugin, cross_process, or in the plugin that kept it, re-attached);
// a turn in flight goes on in the plugin that kept it when that plugin can
// be re-attached; otherwise the turn is ended — its lingering plugin is
// stopped, its log gets an avenor.error and a session.end{stop_reason:
// "error"}, its sentinel FAILED — since it cannot be taken over. Nothing
// is started twice: a plugin is stopped, never launched again, by
// recovery.

// Recovered is what Recover leaves its owner to do.
type Recovered struct {
	// Kept is the plugin of a parked session, re-attached: the runtime
	// keeps it (the owner counts it among its kept plugins).
	Kept *hostrt.HeldSession
	// Adopt: a turn in flight is to go on (Go with the spawn's prompt and
	// the record's session, its slot taken whatever the limits say now,
	// then AnswerRecorded).
	Adopt bool
}

// Recover restores the supervised runtime r records (spec: RecordSpec's,
// dead its reason) with its log continued and settles it. An error is one
// its log could not be read or ended with.
func Recover(r Record, spec Spec, dead string, deps Deps) (*Runtime, Recovered, error) {
	lastSeq, lastType, err := LogTail(r.OnEvent)
	if err != nil {
		return nil, Recovered{}, err
	}
	rt := Restore(spec, lastSeq, deps)
	rec, err := rt.recover(r, lastSeq, lastType, dead)
	return rt, rec, err
}

func (rt *Runtime) recover(r Record, lastSeq int64, lastType, dead string) (Recovered, error) {
	l := rt.life
	l.mu.Lock()
	l.sessionID, l.dead, l.parkedAt = r.SessionID, dead, rt.now().UnixMilli()
	l.rateWait = r.RateLimit // a run that takes the turn over resumes the wait
	l.mu.Unlock()
	rt.markReady()
	stop := func() {
		if r.Plugin != nil {
			StopLingering(r.Plugin.PID)
		}
	}
	if r.AcceptedAt > 0 && lastSeq <= r.AcceptedAt {
		// A follow-up prompt was answered accepted, and its run wrote
		// nothing before the supervisor died: the log's session.end is the
		// turn before it. The prompt did not run; its turn ends in error,
		// so the harness waiting on it hears so, and the runtime is ended
		// (docs/stable.md#runtimes: only a turn that ended well parks). A
		// plugin that kept the session is stopped rather than trusted with
		// a turn in an unknown state.
		msg := fmt.Sprintf("runtime %s: the supervisor died after accepting a prompt and before its turn started; the prompt did not run (send it again in a new runtime: spawn with session_id %s)", r.ID, r.SessionID)
		err := rt.endTurnInError(r, msg)
		if err == nil {
			stop()
		}
		return Recovered{}, err
	}
	// A log that ends with a session.end holds a whole turn, whatever the
	// record says: the supervisor may have died between writing that line
	// and the sentinel, or before it saved the runtime as parked.
	turnEnded := lastType == string(event.TypeSessionEnd)
	if turnEnded {
		rt.settleEndedTurn(r)
	}
	// A turn that ended badly ended its runtime (docs/stable.md#runtimes):
	// its plugin is not taken over to keep a session nobody can prompt.
	l.mu.Lock()
	ended := rt.endedLocked()
	l.mu.Unlock()
	if p := r.Plugin; p != nil && r.SessionID != "" && dead == "" && ended == "" && IsAvenorPlugin(p.PID) {
		if rec, ok := rt.reattach(r, !turnEnded); ok {
			return rec, nil
		}
	}
	if r.State != RecordRunning || turnEnded {
		// Parked or ended: its log and sentinel are whole. A plugin that
		// still lingers with the session could not be taken over: it is
		// stopped, and with it its runtime; the session resumes by id.
		stop()
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.result == nil {
			if ec, stop, ok := ReadSentinel(r.Sentinel); ok {
				l.result = &hostrt.Result{ExitCode: ec, StopReason: stop, SessionID: r.SessionID}
			}
		}
		if r.State == RecordEnded && l.dead == "" && rt.endedLocked() == "" {
			l.dead = "ended before the supervisor's restart"
		}
		return Recovered{}, nil
	}
	stop()
	msg := fmt.Sprintf("runtime %s: the supervisor died during its turn and the one that took over its socket could not re-attach to its plugin; the turn ended with stop reason error",
		r.ID)
	l.mu.Lock()
	l.dead = "lost its turn when the supervisor died"
	l.mu.Unlock()
	if len(r.Pending) > 0 {
		msg += fmt.Sprintf("; permission request %s was pending and is moot", r.Pending[len(r.Pending)-1].RequestID)
	}
	return Recovered{}, rt.endTurnInError(r, msg)
}

// endTurnInError ends the runtime's turn in its log and sentinel for the
// dead supervisor: an avenor.error saying msg (also on stderr), a
// session.end{stop_reason:"error"}, the sentinel FAILED.
func (rt *Runtime) endTurnInError(r Record, msg string) error {
	fmt.Fprintf(rt.stderr(), "avenor stable: %s\n", msg)
	if err := rt.EndTurn(r.SessionID, msg); err != nil {
		return err
	}
	rec := sentinel.Record{ExitCode: sentinel.ExitFailure, SessionID: r.SessionID, StopReason: sdk.StopError, RunID: r.RunID}
	if err := sentinel.Write(r.Sentinel, rec); err != nil {
		fmt.Fprintf(rt.stderr(), "avenor: writing sentinel: %v\n", err)
	}
	rt.setResult(hostrt.Result{ExitCode: rec.ExitCode, StopReason: rec.StopReason, SessionID: r.SessionID})
	return nil
}

// settleEndedTurn gives a runtime whose log ends with a turn's session.end
// its result, read from its sentinel, or, when the supervisor died before
// writing it, from that session.end: the sentinel is written then, so a
// harness waiting on it does not wait for ever. The sentinel is always the
// last thing of a turn; the log's line says the turn is whole.
func (rt *Runtime) settleEndedTurn(r Record) {
	if ec, stop, ok := ReadSentinel(r.Sentinel); ok {
		rt.setResult(hostrt.Result{ExitCode: ec, StopReason: stop, SessionID: r.SessionID})
		return
	}
	sid, stop, err := sentinel.ReadLastSessionEnd(r.OnEvent)
	if err != nil {
		rt.log.Warn("reading the last session.end of a runtime's log", "error", err)
		return
	}
	if sid == "" {
		sid = r.SessionID
	}
	rec := sentinel.Record{ExitCode: sentinel.ExitCode(stop), SessionID: sid, StopReason: stop, RunID: r.RunID}
	if err := sentinel.Write(r.Sentinel, rec); err != nil {
		fmt.Fprintf(rt.stderr(), "avenor: writing sentinel: %v\n", err)
		return
	}
	rt.log.Info("wrote the sentinel of a turn that ended just before the supervisor died", "stop_reason", stop)
	rt.setResult(hostrt.Result{ExitCode: rec.ExitCode, StopReason: rec.StopReason, SessionID: sid})
}

func (rt *Runtime) setResult(res hostrt.Result) {
	rt.life.mu.Lock()
	rt.life.result = &res
	rt.life.mu.Unlock()
}

// reattach takes the runtime's session over from the plugin that kept it:
// a turn still open in the log (midTurn) is to go on in a run that awaits
// it (its permission requests asked again, its end written as usual); a
// parked session is held again. False: the plugin could not be reached or
// would not hand the session over, and recovery ends the runtime.
func (rt *Runtime) reattach(r Record, midTurn bool) (Recovered, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), ReattachWait)
	defer cancel()
	p := r.Plugin
	info := plugin.ReattachInfo{Network: p.Network, Address: p.Address, PID: p.PID, Protocol: p.Protocol, ProtocolVersion: p.ProtocolVersion}
	adopt, err := ReattachSession(ctx, info, r.Backend, r.SessionID, r.OnEvent, midTurn, rt.log)
	if err != nil {
		rt.log.Warn("re-attaching to a runtime's plugin", "pid", p.PID, "error", err)
		return Recovered{}, false
	}
	pl := adopt.Plugin
	l := rt.life
	l.mu.Lock()
	l.plugin, l.scope = pl.Client.Info().Name, pl.Backend.Info().ResumeScope
	if midTurn {
		// Mid-turn (or before its first turn): a run continues it.
		l.plan = adopt
		l.mu.Unlock()
		return Recovered{Adopt: true}, true
	}
	l.mu.Unlock()
	held, ra, err := hostrt.ReattachHeld(ctx, pl, adopt.Reattach, rt.log)
	if err != nil {
		rt.log.Warn("taking a parked runtime's session over", "error", err)
		pl.Client.Kill()
		return Recovered{}, false
	}
	// Its log ends with its turn's session.end, and stays so: a harness
	// reads the last line as the runtime's state. Only a turn taken over
	// gets avenor.supervisor.reattached.
	rt.log.Info("re-attached a parked runtime's plugin", "buffered", ra.BufferedEvents, "gap_ms", ra.Gap.Milliseconds())
	l.mu.Lock()
	l.held, l.launched = held, pl
	rt.watchHeldLocked(held)
	l.mu.Unlock()
	return Recovered{Kept: held}, true
}

// AnswerRecorded answers again, with the decision the dead supervisor
// recorded, a permission request it decided but whose decision may not
// have reached the plugin: the plugin asks it again after the take-over,
// and the runtime gets the decision once (the plugin takes one per request
// id).
func (rt *Runtime) AnswerRecorded(perms []PermissionRecord) {
	for _, p := range perms {
		if p.Delivery != DeliveryDecided || len(p.Decision) == 0 {
			continue
		}
		var d struct {
			OptionID string `json:"option_id"`
			Kind     string `json:"kind"`
			Source   string `json:"source"`
		}
		if json.Unmarshal(p.Decision, &d) != nil || d.OptionID == "" {
			continue
		}
		id := p.RequestID
		rt.life.watchers.Add(1)
		go func() {
			defer rt.life.watchers.Done()
			deadline := time.Now().Add(ReattachWait)
			for time.Now().Before(deadline) {
				for _, req := range rt.broker.Pending() {
					if req.ID == id {
						src := d.Source
						if !permission.ValidAnswerSource(src) {
							src = ""
						}
						if err := rt.broker.Answer(id, permission.Answer{OptionID: d.OptionID, Source: src}); err != nil {
							rt.log.Debug("answering a recorded decision again", "request_id", id, "error", err)
						}
						return
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
}

func (rt *Runtime) stderr() io.Writer {
	if w := rt.spec.Options.Stderr; w != nil {
		return w
	}
	return io.Discard
}

func (rt *Runtime) now() time.Time {
	if now := rt.spec.Options.Now; now != nil {
		return now()
	}
	return time.Now()
}
