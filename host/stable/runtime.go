package stable

import (
	"context"
	"encoding/json"
	"runtime/debug"
	"strconv"
	"time"

	hostrun "github.com/avenor-go/avenor/host/run"
	hostrt "github.com/avenor-go/avenor/host/runner"
)

// PhaseSlotRetry is how often a loop or team phase waiting for an executing
// slot looks again when none was given back in this supervisor: other
// supervisors of its tree free tree budget without telling it.
const PhaseSlotRetry = 250 * time.Millisecond

// runtime is one runtime of the supervisor: its entry in the table. The
// runtime itself — its runs, parking, kept plugin, follow-ups and durable
// record — is its host/run runtime (run); the entry keeps what the
// supervisor decides: its id, its spawn, its slots and when it is reaped.
// It is its run's Owner.
type runtime struct {
	s      *Supervisor
	id     string
	n      int
	params SpawnParams // as spawned, for the state file
	// spawnJSON is params encoded once: the state file is written on
	// every change of any runtime, and the spawn never changes.
	spawnJSON json.RawMessage
	run       *hostrun.Runtime
	started   int64

	// Under s.mu. ownSlotBusy: a phase of the phased run runs in the
	// runtime's own executing slot; phaseSlots counts the extra slots its
	// phases took (their names). parkGen voids a reap that is due.
	ownSlotBusy bool
	phaseSlots  int
	parkGen     int
	parkTimer   *time.Timer
}

// setParams sets the runtime's spawn and its encoding for the state file.
func (rt *runtime) setParams(p SpawnParams) {
	rt.params = p
	rt.spawnJSON, _ = json.Marshal(p)
}

// Changed implements hostrun.Owner: the state file is written.
func (rt *runtime) Changed() { rt.s.dirty() }

// Durable implements hostrun.Owner.
func (rt *runtime) Durable() error { return rt.s.saveSync() }

// Stopping implements hostrun.Owner: from the shutdown method's answer on,
// nothing new is started.
func (rt *runtime) Stopping() error {
	s := rt.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stoppingLocked() {
		return ErrShuttingDown
	}
	return nil
}

// Gone implements hostrun.Owner.
func (rt *runtime) Gone() error { return unknownRuntime(rt.id) }

// Admit implements hostrun.Owner: a follow-up takes an executing slot,
// and a reap already due is void.
func (rt *runtime) Admit() error {
	s := rt.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.admitLocked(rt.id); err != nil {
		return err
	}
	if rt.parkTimer != nil {
		rt.parkTimer.Stop()
	}
	rt.parkGen++
	return nil
}

// Refused implements hostrun.Owner.
func (rt *runtime) Refused() {
	s := rt.s
	s.mu.Lock()
	s.releaseLocked(rt.id)
	if rt.run.State() == hostrun.Parked {
		rt.armParkTimerLocked()
	}
	s.mu.Unlock()
}

// Ended implements hostrun.Owner: the runtime parks, keeping its plugin
// unless the supervisor stops, within MaxKeptPlugins (or is retired while
// the supervisor stops).
func (rt *runtime) Ended(res hostrt.Result) []*hostrt.HeldSession {
	s := rt.s
	var toClose []*hostrt.HeldSession
	s.mu.Lock()
	kept, drop := rt.run.Settle(res, !s.closing, s.cfg.Now().UnixMilli())
	if drop != nil {
		toClose = append(toClose, drop)
	}
	if kept != nil {
		toClose = append(toClose, s.keepLocked(rt, kept)...)
	}
	rt.armParkTimerLocked()
	s.releaseLocked(rt.id)
	s.mu.Unlock()
	return toClose
}

// Unkept implements hostrun.Owner.
func (rt *runtime) Unkept(h *hostrt.HeldSession) {
	rt.s.mu.Lock()
	rt.s.unkeepLocked(rt, h)
	rt.s.mu.Unlock()
}

// PhaseSlot implements hostrun.Owner: an executing slot for one phase —
// the runtime's own, admitted at spawn, when no other phase of it holds
// it; else one of its own, admitted as a spawn is (--max-runtimes, then
// the tree budget). It waits while neither is free. The own slot keeps a
// team going whatever else runs: a team never waits on slots that only it
// could free.
func (rt *runtime) PhaseSlot(ctx context.Context) (release func(), err error) {
	s := rt.s
	for {
		s.mu.Lock()
		if !rt.ownSlotBusy {
			rt.ownSlotBusy = true
			s.mu.Unlock()
			return func() {
				s.mu.Lock()
				rt.ownSlotBusy = false
				s.slotFreedLocked()
				s.mu.Unlock()
			}, nil
		}
		rt.phaseSlots++
		id := rt.id + "." + strconv.Itoa(rt.phaseSlots)
		if err := s.admitLocked(id); err == nil {
			s.mu.Unlock()
			return func() {
				s.mu.Lock()
				s.releaseLocked(id)
				s.mu.Unlock()
			}, nil
		}
		freed := s.slotWaitLocked()
		s.mu.Unlock()
		t := time.NewTimer(PhaseSlotRetry)
		select {
		case <-freed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		t.Stop()
	}
}

// Describe implements hostrun.Owner: the supervisor's fields of the
// runtime's entry (docs/control-protocol.md#list).
func (rt *runtime) Describe(e map[string]any) {
	_, children := rt.s.sorted()
	rt.describe(e, children[rt.id])
}

func (rt *runtime) describe(e map[string]any, children []string) {
	p := rt.params
	e["parent_id"], e["children"], e["started_at"] = p.ParentID, append([]string{}, children...), rt.started
	e["agent_profile"], e["parent_run_id"] = p.AgentProfile, p.ParentRunID
}

// armParkTimerLocked reaps the parked runtime after ParkedTimeout; s.mu
// is held.
func (rt *runtime) armParkTimerLocked() {
	s := rt.s
	if s.closing || s.cfg.ParkedTimeout <= 0 {
		return
	}
	rt.parkGen++
	gen := rt.parkGen
	rt.parkTimer = time.AfterFunc(s.cfg.ParkedTimeout, func() { rt.reap(gen) })
}

// reap removes a runtime parked for ParkedTimeout.
func (rt *runtime) reap(gen int) {
	s := rt.s
	s.mu.Lock()
	if rt.parkGen != gen || s.closing {
		s.mu.Unlock()
		return
	}
	h, ok := rt.run.Retire(true)
	if !ok {
		s.mu.Unlock()
		return
	}
	s.unkeepLocked(rt, nil)
	delete(s.runtimes, rt.id)
	s.releaseMemoryLocked()
	s.mu.Unlock()
	s.log.Debug("reaped a parked runtime", "runtime_id", rt.id)
	s.dirty()
	if h != nil {
		h.Close()
	}
	rt.closeStream()
}

// retire ends the runtime at shutdown: its kept plugin stops, its stream
// closes.
func (rt *runtime) retire() {
	rt.s.mu.Lock()
	if rt.parkTimer != nil {
		rt.parkTimer.Stop()
	}
	rt.parkGen++
	rt.s.mu.Unlock()
	if h, _ := rt.run.Retire(false); h != nil {
		h.Close()
	}
	rt.closeStream()
}

func (rt *runtime) closeStream() {
	if err := rt.run.Close(); err != nil {
		rt.s.log.Warn("closing an event log", "runtime_id", rt.id, "error", err)
	}
}

// ReapReleaseDelay is how long after reaping parked runtimes the
// supervisor hands the memory they held back to the system (one forced
// collection for a burst of reaps). Go would return it only minutes later,
// so a supervisor that had parked large answers kept its size long after
// their runtimes were gone.
const ReapReleaseDelay = 2 * time.Second

// releaseMemoryLocked schedules the one release of the memory of the
// runtimes reaped in the next ReapReleaseDelay; s.mu is held.
func (s *Supervisor) releaseMemoryLocked() {
	if s.releaseTimer != nil || s.closing {
		return
	}
	s.releaseTimer = time.AfterFunc(ReapReleaseDelay, func() {
		s.mu.Lock()
		s.releaseTimer = nil
		closing := s.closing
		s.mu.Unlock()
		if !closing {
			debug.FreeOSMemory()
		}
	})
}

// YieldSlot implements hostrun.SlotYielder (docs/unattended.md#rate-limits):
// a runtime waiting on a rate limit holds no slot, yet keeps the supervisor from idling.
func (rt *runtime) YieldSlot() (reacquire func(context.Context) error) {
	s := rt.s
	s.mu.Lock()
	s.active, s.rateWaits = s.active-1, s.rateWaits+1
	s.slotFreedLocked()
	s.mu.Unlock()
	return func(ctx context.Context) error {
		for s.mu.Lock(); s.active >= s.cfg.MaxRuntimes && ctx.Err() == nil; s.mu.Lock() {
			freed := s.slotWaitLocked()
			s.mu.Unlock()
			select {
			case <-freed:
			case <-ctx.Done():
			case <-time.After(PhaseSlotRetry):
			}
		}
		s.active, s.rateWaits = s.active+1, s.rateWaits-1
		s.mu.Unlock()
		return ctx.Err()
	}
}
