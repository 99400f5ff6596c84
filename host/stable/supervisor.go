package stable

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/host/control"
	hostrun "github.com/avenor-go/avenor/host/run"
	hostrt "github.com/avenor-go/avenor/host/runner"
	"github.com/avenor-go/avenor/sdk/safefile"
)

// Reasons a supervisor stops (the tombstone's reason=).
const (
	ReasonSignal      = "signal"
	ReasonShutdown    = "shutdown"
	ReasonIdle        = "idle"
	ReasonStartFailed = "start_failed"
	ReasonCrashed     = "crashed"
)

// Shutdown modes (docs/control-protocol.md#shutdown).
const (
	ModeGraceful  = "graceful"
	ModeKill      = "kill"
	ModeImmediate = "immediate"
)

// Bounds of the supervisor.
const (
	// killWait bounds how long a kill shutdown waits for runs to write
	// their last events and sentinels after their plugins were killed.
	killWait = 5 * time.Second
	// spawnWait bounds how long spawn waits for the session to open.
	spawnWait = 60 * time.Second
	// recoveryWait bounds how long a control call waits for the runtimes
	// of a dead predecessor to be recovered (recover.go).
	recoveryWait = 60 * time.Second
)

// Supervisor runs many runtimes behind one control socket. Build it with
// New, run it with Serve.
type Supervisor struct {
	cfg  Config
	log  hclog.Logger
	srv  *control.Server
	idem *idemStore
	tree *hostrun.TreeBudget
	warm *warmSet
	// artifacts is <TempDir>/avenor-stable/<RunID>.
	artifacts string

	group hostrun.Group // the runtimes' goroutines

	mu       sync.Mutex
	runtimes map[string]*runtime
	nextN    int
	active   int // executing runtimes (starting or running)
	// activePeak is the most runtimes executing at once since the
	// memory was last released (burstEndedLocked).
	activePeak int
	rateWaits  int // runtimes waiting for a rate limit's reset, holding no slot
	conns      int
	kept       []keptRuntime // parked runtimes keeping their plugin, oldest first
	allSubs    []*allSub
	closing    bool
	idleTimer  *time.Timer
	nextCQ     int
	// releaseTimer hands reaped runtimes' memory back (runtime.go).
	releaseTimer *time.Timer
	// slotFreed is closed (and replaced) when an executing slot is given
	// back: phases waiting for one look again.
	slotFreed chan struct{}

	// store holds the durable state (nil without Config.StateDir); the
	// saver goroutine writes it when dirty (persist.go).
	store     store
	saveCh    chan struct{}
	saverQuit chan struct{}
	saverDone chan struct{}
	// saveWaiters are saveSync callers waiting for the next write.
	saveWaitMu  sync.Mutex
	saveWaiters []chan error
	pid         int
	// recovered is closed once the runtimes of a dead predecessor are back
	// (or there were none): until then the runtime table is not whole, and
	// lookups wait for it.
	recovered     chan struct{}
	recoveredOnce sync.Once

	stopOnce   sync.Once
	stopCh     chan struct{}
	done       chan struct{} // closed when Serve has stopped everything
	stopReason string
	stopMode   string
}

// New checks cfg and returns a supervisor; nothing runs until Serve.
func New(cfg Config) (*Supervisor, error) {
	if cfg.SocketPath == "" {
		return nil, errors.New("--control-socket is required")
	}
	if cfg.Resolve == nil {
		return nil, errors.New("stable: Config.Resolve is required")
	}
	cfg.defaults()
	warm, err := newWarmSet(cfg)
	if err != nil {
		return nil, err
	}
	s := &Supervisor{warm: warm,
		cfg: cfg, log: cfg.Logger, idem: newIdemStore(cfg.Now),
		artifacts: filepath.Join(cfg.TempDir, "avenor-stable", cfg.RunID),
		runtimes:  map[string]*runtime{}, stopCh: make(chan struct{}), done: make(chan struct{}),
		pid: os.Getpid(), recovered: make(chan struct{}),
	}
	if cfg.StateDir == "" {
		s.markRecovered() // nothing to recover
	}
	return s, nil
}

// RunID is the supervisor's run id.
func (s *Supervisor) RunID() string { return s.cfg.RunID }

// TombstonePath is <socket>.dead.
func (s *Supervisor) TombstonePath() string { return s.cfg.SocketPath + ".dead" }

// Serve removes a stale tombstone, listens on the control socket and serves
// until ctx ends (reason signal: SIGTERM/SIGINT), a shutdown call, or the
// idle timeout; it then stops every runtime, writes the tombstone and
// returns the reason. A socket that cannot be bound returns reason
// start_failed and the error.
func (s *Supervisor) Serve(ctx context.Context) (reason string, err error) {
	defer close(s.done)
	defer s.markRecovered()
	tomb := s.TombstonePath()
	if err := os.Remove(tomb); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log.Warn("could not remove the old tombstone", "path", tomb, "error", err)
	}
	defer func() {
		if p := recover(); p != nil {
			s.writeTombstone(ReasonCrashed)
			panic(p)
		}
	}()
	s.tree = hostrun.OpenTreeBudget(s.cfg.TreeBudgetPath, s.cfg.Home, s.cfg.RunID, s.cfg.MaxTreeBudget, s.cfg.Now)
	if reason, degraded := s.tree.Degraded(); degraded {
		s.log.Warn("tree budget degraded: only --max-runtimes applies", "reason", reason)
	}
	s.srv = control.NewServer(control.Config{
		Path: s.cfg.SocketPath, Logger: s.log.Named("control"), IdentityToken: s.cfg.IdentityToken,
		Ready: s.cfg.Ready, OnConnections: s.connectionsChanged,
	})
	s.register(s.srv)
	err = s.srv.Start()
	if err == nil {
		// The socket is ours now: no other supervisor serves it, so none
		// is recovering the same state.
		err = s.openState()
		s.markRecovered()
	}
	if err != nil {
		s.srv.Close()
		s.tree.Close()
		s.writeTombstone(ReasonStartFailed)
		return ReasonStartFailed, err
	}
	s.startSaver()
	s.dirty()
	s.mu.Lock()
	s.idleCheckLocked()
	s.mu.Unlock()
	s.runWarm()

	mode := ModeGraceful
	select {
	case <-ctx.Done():
		reason = ReasonSignal
		s.requestStop(ReasonSignal, ModeGraceful) // later requests change nothing
	case <-s.stopCh:
	}
	s.mu.Lock()
	reason, mode = s.stopReason, s.stopMode
	s.mu.Unlock()
	s.shutdown(mode)
	// Every runtime was stopped here: nothing is left for a successor.
	s.stopSaver(true)
	if err := s.srv.Close(); err != nil {
		s.log.Warn("closing the control socket", "error", err)
	}
	s.tree.Close()
	if err := os.Remove(s.artifacts); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log.Debug("artifact directory kept", "path", s.artifacts, "error", err)
	}
	s.writeTombstone(reason)
	return reason, nil
}

// stoppingLocked reports whether a stop was requested or has begun; s.mu is
// held. From the shutdown method's answer on, nothing new is started.
func (s *Supervisor) stoppingLocked() bool {
	if s.closing {
		return true
	}
	select {
	case <-s.stopCh:
		return true
	default:
		return false
	}
}

// requestStop asks Serve to stop; the first request wins.
func (s *Supervisor) requestStop(reason, mode string) {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopReason, s.stopMode = reason, mode
		s.mu.Unlock()
		close(s.stopCh)
	})
}

// writeTombstone writes <socket>.dead: STOPPED reason=… pid=… at=….
func (s *Supervisor) writeTombstone(reason string) {
	line := fmt.Sprintf("STOPPED reason=%s pid=%d at=%s\n", reason, os.Getpid(), s.cfg.Now().UTC().Format(time.RFC3339Nano))
	path := s.TombstonePath()
	// Beside the socket, maybe in a shared directory: a fixed .tmp name
	// there could be a planted symlink.
	if err := safefile.WriteFile(path, []byte(line), 0o600); err != nil {
		fmt.Fprintf(s.cfg.Stderr, "avenor stable: writing the tombstone %s: %v\n", path, err)
	}
}

// connectionsChanged is the control server's OnConnections.
func (s *Supervisor) connectionsChanged(n int) {
	s.mu.Lock()
	s.conns = n
	s.idleCheckLocked()
	s.mu.Unlock()
}

// idleCheckLocked arms the idle timer while nothing executes and no client
// is connected, and disarms it otherwise.
func (s *Supervisor) idleCheckLocked() {
	if s.cfg.IdleTimeout <= 0 || s.closing {
		return
	}
	idle := s.active == 0 && s.conns == 0 && s.rateWaits == 0
	switch {
	case idle && s.idleTimer == nil:
		var t *time.Timer
		t = time.AfterFunc(s.cfg.IdleTimeout, func() {
			s.mu.Lock()
			still := s.idleTimer == t
			s.mu.Unlock()
			if still {
				s.requestStop(ReasonIdle, ModeGraceful)
			}
		})
		s.idleTimer = t
	case !idle:
		stopTimer(&s.idleTimer)
	}
}

// admitLocked takes an executing slot for id: the local limit first, then
// the tree budget (docs/stable.md#limits).
func (s *Supervisor) admitLocked(id string) error {
	if s.closing {
		return ErrShuttingDown
	}
	if s.active >= s.cfg.MaxRuntimes {
		return capacityError(SourceLocal, s.cfg.MaxRuntimes, s.active)
	}
	if err := s.tree.Reserve(id, treeFull); err != nil {
		return err
	}
	if s.active+s.warm.slotsLocked() >= s.cfg.MaxRuntimes {
		// Warm runtimes hold slots only until a spawn needs one.
		s.yieldWarmLocked()
	}
	s.active++
	s.activePeak = max(s.activePeak, s.active)
	s.idleCheckLocked()
	return nil
}

// releaseLocked gives id's executing slot back.
func (s *Supervisor) releaseLocked(id string) {
	s.active--
	s.tree.Release(id)
	s.idleCheckLocked()
	s.slotFreedLocked()
	s.burstEndedLocked()
}

// BurstRuntimes is the fewest runtimes executing at once whose end (half
// of them or more parked, ended or reaped) hands the memory they streamed
// through back to the system (releaseMemoryLocked): Go keeps a freed heap
// for minutes, so 200 runtimes that had all parked left the supervisor
// at the size it had while they streamed.
const BurstRuntimes = 8

// burstEndedLocked releases memory once the runtimes executing fell to
// half of their peak since the last release; s.mu is held.
func (s *Supervisor) burstEndedLocked() {
	if burstEnded(s.activePeak, s.active) {
		s.activePeak = s.active
		s.releaseMemoryLocked()
	}
}

// burstEnded: peak runtimes executing at once (BurstRuntimes at least)
// fell to active, half of them or fewer.
func burstEnded(peak, active int) bool { return peak >= BurstRuntimes && active <= peak/2 }

// slotFreedLocked wakes the phases waiting for an executing slot.
func (s *Supervisor) slotFreedLocked() {
	if s.slotFreed != nil {
		close(s.slotFreed)
		s.slotFreed = nil
	}
}

// slotWaitLocked is closed at the next slotFreedLocked.
func (s *Supervisor) slotWaitLocked() <-chan struct{} {
	if s.slotFreed == nil {
		s.slotFreed = make(chan struct{})
	}
	return s.slotFreed
}

// markRecovered opens the runtime table to lookups.
func (s *Supervisor) markRecovered() { s.recoveredOnce.Do(func() { close(s.recovered) }) }

// waitRecovered waits, bounded, for recovery to finish.
func (s *Supervisor) waitRecovered() {
	select {
	case <-s.recovered:
	case <-time.After(recoveryWait):
	}
}

// lookup returns a live runtime.
func (s *Supervisor) lookup(id string) (*runtime, error) {
	if id == "" {
		return nil, control.MissingParams("runtime_id")
	}
	s.waitRecovered()
	s.mu.Lock()
	rt := s.runtimes[id]
	s.mu.Unlock()
	if rt == nil {
		return nil, unknownRuntime(id)
	}
	return rt, nil
}

// all returns the runtimes, in no order.
func (s *Supervisor) all() []*runtime {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Values(s.runtimes))
}

// sorted returns the runtimes in id order and each one's children.
func (s *Supervisor) sorted() ([]*runtime, map[string][]string) {
	s.waitRecovered()
	list := s.all()
	sort.Slice(list, func(i, j int) bool { return list[i].n < list[j].n })
	children := map[string][]string{}
	for _, rt := range list {
		if p := rt.params.ParentID; p != "" {
			children[p] = append(children[p], rt.id)
		}
	}
	return list, children
}

// keepLocked records rt as keeping its plugin h while parked and returns
// the kept plugins that must stop to stay within MaxKeptPlugins. Every
// kept plugin counts, in_process ones too: parked runtimes do not count
// against --max-runtimes (docs/stable.md), so without this bound each
// parked in_process runtime held a process for its whole parking (40
// spawns under --max-runtimes 2 left 40 plugins running). The longest
// parked cross_process runtime goes first, since it loses only speed (its
// next follow-up resumes in a fresh plugin); an in_process one goes only
// when no cross_process one is left, and its session is then lost.
func (s *Supervisor) keepLocked(rt *runtime, h *hostrt.HeldSession) []*hostrt.HeldSession {
	var stop []*hostrt.HeldSession
	for _, v := range s.boundKeptLocked(keptRuntime{rt: rt, held: h, inProcess: rt.run.InProcess()}) {
		if h := v.run.Evict(s.cfg.MaxKeptPlugins); h != nil {
			stop = append(stop, h)
		}
	}
	return stop
}

// boundKeptLocked adds k to the kept list and returns the runtimes that
// must stop their plugins, in order.
func (s *Supervisor) boundKeptLocked(k keptRuntime) []*runtime {
	s.kept = append(s.kept, k)
	var evict []*runtime
	for len(s.kept) > s.cfg.MaxKeptPlugins {
		i := 0
		for j, k := range s.kept {
			if !k.inProcess {
				i = j
				break
			}
		}
		evict = append(evict, s.kept[i].rt)
		s.kept = append(s.kept[:i], s.kept[i+1:]...)
	}
	return evict
}

// keptRuntime is a parked runtime keeping its plugin.
type keptRuntime struct {
	rt        *runtime
	held      *hostrt.HeldSession
	inProcess bool // its session lives only in that plugin
}

// unkeepLocked forgets rt (keeping h; nil: whatever) in the kept list.
func (s *Supervisor) unkeepLocked(rt *runtime, h *hostrt.HeldSession) {
	for i, k := range s.kept {
		if k.rt == rt && (h == nil || k.held == h) {
			s.kept = append(s.kept[:i], s.kept[i+1:]...)
			return
		}
	}
}

// shutdown stops every runtime: graceful cancels the running ones and waits
// ShutdownTimeout for them (then kills what is left); kill and immediate
// kill their plugins at once and wait only for the last events.
func (s *Supervisor) shutdown(mode string) {
	s.mu.Lock()
	s.closing = true
	stopTimer(&s.idleTimer)
	stopTimer(&s.releaseTimer)
	s.mu.Unlock()
	list := s.all()
	s.stopWarm()

	for _, rt := range list {
		rt.run.Cancel()
	}
	wait := s.cfg.ShutdownTimeout
	if mode != ModeGraceful {
		for _, rt := range list {
			rt.run.KillRunning()
		}
		wait = killWait
	}
	if !s.group.WaitRuns(wait) {
		s.log.Warn("runtimes did not stop in time; killing their plugins", "waited", wait)
		for _, rt := range list {
			rt.run.KillRunning()
		}
		if !s.group.WaitRuns(killWait) {
			s.log.Error("runtimes still running after their plugins were killed")
		}
	}
	// At once: a kept plugin can take a second or two to stop (a
	// re-attached one is no child of ours, and its exit is polled), and
	// shutdown waits for the slowest only.
	var retiring sync.WaitGroup
	for _, rt := range list {
		retiring.Add(1)
		go func() {
			defer retiring.Done()
			rt.retire()
		}()
	}
	retiring.Wait()
	s.group.WaitOthers()
}

// stopTimer stops *t, if any, and forgets it.
func stopTimer(t **time.Timer) {
	if *t != nil {
		(*t).Stop()
		*t = nil
	}
}

// runtimeID is rt_<n>.
func runtimeID(n int) string { return "rt_" + strconv.Itoa(n) }
