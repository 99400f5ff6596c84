package stable

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	hostrun "github.com/avenor-go/avenor/host/run"
	hostrt "github.com/avenor-go/avenor/host/runner"
)

// Bounds of the warm pools (rows in internal/docgen/bounds.go).
const (
	// DefaultWarmIdle is how long a pool nobody took from keeps its members
	// (--warm-idle): then they stop, and the next spawn of the pool's key
	// starts cold and wakes the pool again.
	DefaultWarmIdle = 30 * time.Minute
	// WarmOpenBudget bounds starting one member: the plugin, the CLI and
	// its session opening.
	WarmOpenBudget = 2 * time.Minute
	// WarmRetryMin and WarmRetryMax bound the backoff after a member that
	// failed to start or died soon after it started.
	WarmRetryMin = time.Second
	WarmRetryMax = time.Minute
	// warmShortLife: a member that dies sooner than this after it was
	// ready counts as a failure (backoff), not as wear.
	warmShortLife = 10 * time.Second
)

// WarmSpec asks for Count runtimes of Backend kept started, initialised and
// with a fresh session open in Dir (default the supervisor's working dir),
// with Model, Agent and Thinking ("" = what a spawn naming only the backend
// resolves to). A spawn that resolves to the same backend, model, agent,
// thinking, server URL and dir takes one (`avenor stable --warm`).
type WarmSpec struct {
	Backend, Model, Agent, Thinking, Dir string
	Count                                int
}

// String is the spec as --warm takes it.
func (w WarmSpec) String() string {
	s := w.Backend + "=" + strconv.Itoa(w.Count)
	for _, kv := range [][2]string{{"dir", w.Dir}, {"model", w.Model}, {"agent", w.Agent}, {"thinking", w.Thinking}} {
		if kv[1] != "" {
			s += "," + kv[0] + "=" + kv[1]
		}
	}
	return s
}

// ParseWarm reads one --warm value: BACKEND=N, then optional ,dir=D
// ,model=M ,agent=A ,thinking=T.
func ParseWarm(v string) (WarmSpec, error) {
	bad := func(why string) (WarmSpec, error) {
		return WarmSpec{}, fmt.Errorf("--warm %q: %s (want BACKEND=N[,dir=D][,model=M][,agent=A][,thinking=T], e.g. opencode-acp=2)", v, why)
	}
	parts := strings.Split(v, ",")
	backend, n, ok := strings.Cut(parts[0], "=")
	backend = strings.TrimSpace(backend)
	if !ok || backend == "" {
		return bad("no backend=count")
	}
	count, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || count < 1 || count > MaxWarmPerPool {
		return bad(fmt.Sprintf("the count must be a whole number from 1 to %d", MaxWarmPerPool))
	}
	w := WarmSpec{Backend: backend, Count: count}
	for _, p := range parts[1:] {
		k, val, ok := strings.Cut(p, "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		if !ok || val == "" {
			return bad(fmt.Sprintf("%q is not key=value", p))
		}
		var dst *string
		switch k {
		case "dir":
			dst = &w.Dir
		case "model":
			dst = &w.Model
		case "agent":
			dst = &w.Agent
		case "thinking":
			dst = &w.Thinking
		default:
			return bad(fmt.Sprintf("unknown key %q", k))
		}
		if *dst != "" {
			return bad(fmt.Sprintf("%s given twice", k))
		}
		*dst = val
	}
	return w, nil
}

// MaxWarmPerPool bounds one pool's count: each member is a live CLI.
const MaxWarmPerPool = 32

// warmKey is what a spawn must resolve to for a pool's member to serve it.
type warmKey struct {
	backend, model, agent, thinking, serverURL, dir string
	// questions: a session opened to hear questions is not one opened
	// without, and the other way round.
	questions bool
}

func keyOf(b Backend, dir string) warmKey {
	set := b.Settings
	return warmKey{set.Backend, set.Model, set.Agent, set.Thinking, set.ServerURL, dir, set.Questions}
}

// warmPool is one spec's members; its fields are guarded by the
// supervisor's mu.
type warmPool struct {
	spec     WarmSpec
	key      warmKey
	b        Backend
	ready    []*warmMember // oldest first
	starting map[int]context.CancelFunc
	dormant  bool // idle-stopped: a spawn of the key wakes it
	lastUsed time.Time
	failures int
	retryAt  time.Time
	lastErr  string
}

type warmMember struct {
	n       int
	held    *hostrt.HeldSession
	readyAt time.Time
}

// warmSet is the supervisor's pools; guarded by the supervisor's mu.
type warmSet struct {
	pools []*warmPool
	idle  time.Duration
	next  int
	wake  chan struct{} // buffered 1: the fill loop looks again
	wg    sync.WaitGroup
	stop  chan struct{}
}

// newWarmSet resolves each spec as a spawn naming its backend, model,
// agent, thinking and dir would; a spec that does not resolve (an unknown
// backend, a missing dir) is refused before the supervisor starts.
func newWarmSet(cfg Config) (*warmSet, error) {
	ws := &warmSet{idle: cfg.WarmIdle, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	seen := map[warmKey]string{}
	for _, spec := range cfg.Warm {
		dir := spec.Dir
		if dir == "" {
			dir = "."
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("--warm %s: dir: %w", spec, err)
		}
		keys := map[string]any{"backend": spec.Backend, "dir": abs}
		for k, v := range map[string]string{"model": spec.Model, "agent": spec.Agent, "thinking": spec.Thinking} {
			if v != "" {
				keys[k] = v
			}
		}
		b, err := cfg.Resolve(abs, keys)
		if err != nil {
			return nil, fmt.Errorf("--warm %s: %w", spec, err)
		}
		wd, err := hostrun.WorkDir("dir", b.Settings.Dir)
		if err != nil {
			return nil, fmt.Errorf("--warm %s: %w", spec, err)
		}
		k := keyOf(b, wd)
		if prev, dup := seen[k]; dup {
			return nil, fmt.Errorf("--warm %s: the same runtimes as --warm %s; give one pool the sum", spec, prev)
		}
		seen[k] = spec.String()
		ws.pools = append(ws.pools, &warmPool{spec: spec, key: k, b: b, starting: map[int]context.CancelFunc{}, lastUsed: cfg.Now()})
	}
	return ws, nil
}

// slotsLocked is how many executing slots the pools hold: ready and
// starting members count against --max-runtimes like runtimes do.
func (ws *warmSet) slotsLocked() int {
	n := 0
	for _, p := range ws.pools {
		n += len(p.ready) + len(p.starting)
	}
	return n
}

func (ws *warmSet) poke() {
	select {
	case ws.wake <- struct{}{}:
	default:
	}
}

// takeWarmLocked hands a spawn of key a ready member, or nil (the spawn
// starts cold). Either way the pool counts as used: a dormant one wakes,
// and its refill starts in the background. s.mu is held.
func (s *Supervisor) takeWarmLocked(k warmKey) *hostrt.HeldSession {
	ws := s.warm
	for _, p := range ws.pools {
		if p.key != k {
			continue
		}
		p.lastUsed = s.cfg.Now()
		p.dormant = false
		ws.poke()
		for len(p.ready) > 0 {
			m := p.ready[0]
			p.ready = p.ready[1:]
			if m.held.Alive() {
				s.log.Debug("spawn takes a warm runtime", "backend", k.backend, "warm", m.n, "session_id", m.held.SessionID())
				return m.held
			}
			go m.held.Close()
		}
		return nil
	}
	return nil
}

// yieldWarmLocked gives one pool slot up for a spawn that needs it: a
// ready member of the pool that has been idle longest stops, else a member
// still starting is cancelled. It reports whether a slot was found. s.mu
// is held.
func (s *Supervisor) yieldWarmLocked() bool {
	var oldest *warmPool
	for _, p := range s.warm.pools {
		if len(p.ready) > 0 && (oldest == nil || p.lastUsed.Before(oldest.lastUsed)) {
			oldest = p
		}
	}
	if oldest != nil {
		m := oldest.ready[0]
		oldest.ready = oldest.ready[1:]
		go m.held.Close()
		return true
	}
	for _, p := range s.warm.pools {
		for n, cancel := range p.starting {
			cancel()
			delete(p.starting, n)
			return true
		}
	}
	return false
}

// runWarm fills the pools until the supervisor stops: a member starts when
// its pool is short, awake, past its backoff and an executing slot is
// free; a pool nobody took from for --warm-idle stops its members.
func (s *Supervisor) runWarm() {
	ws := s.warm
	if len(ws.pools) == 0 {
		return
	}
	ws.wg.Add(1)
	go func() {
		defer ws.wg.Done()
		for {
			s.mu.Lock()
			next := s.fillWarmLocked()
			freed := s.slotWaitLocked()
			s.mu.Unlock()
			t := time.NewTimer(next)
			select {
			case <-ws.stop:
				t.Stop()
				return
			case <-ws.wake:
			case <-freed:
			case <-t.C:
			}
			t.Stop()
		}
	}()
}

// fillWarmLocked starts what the pools lack and stops idle pools; it
// returns when to look again. s.mu is held.
func (s *Supervisor) fillWarmLocked() time.Duration {
	ws := s.warm
	now := s.cfg.Now()
	next := WarmRetryMax
	if ws.idle > 0 {
		next = min(next, ws.idle/4+time.Millisecond)
	}
	for _, p := range ws.pools {
		if ws.idle > 0 && !p.dormant && now.Sub(p.lastUsed) >= ws.idle {
			p.dormant = true
			for _, m := range p.ready {
				go m.held.Close()
			}
			p.ready = nil
			for n, cancel := range p.starting {
				cancel()
				delete(p.starting, n)
			}
			s.log.Debug("warm pool idle: members stopped", "pool", p.spec.String(), "idle", ws.idle)
			s.slotFreedLocked()
			continue
		}
		if p.dormant {
			continue
		}
		if wait := p.retryAt.Sub(now); wait > 0 {
			next = min(next, wait)
			continue
		}
		for len(p.ready)+len(p.starting) < p.spec.Count && !s.closing && s.active+ws.slotsLocked() < s.cfg.MaxRuntimes {
			s.startWarmLocked(p)
		}
	}
	return next
}

// startWarmLocked starts one member of p in the background. s.mu is held.
func (s *Supervisor) startWarmLocked(p *warmPool) {
	ws := s.warm
	ws.next++
	n := ws.next
	ctx, cancel := context.WithTimeout(context.Background(), WarmOpenBudget)
	p.starting[n] = cancel
	opts := hostrt.Options{Dir: p.key.dir, DirExplicit: p.spec.Dir != "", RunID: NewRunID(), Logger: s.log.Named("warm")}
	p.b.Apply(&opts)
	opts.Env = s.runtimeEnv(p.b.Env)
	ws.wg.Add(1)
	go func() {
		defer ws.wg.Done()
		held, err := hostrt.Prewarm(ctx, opts)
		cancel()
		s.mu.Lock()
		_, wanted := p.starting[n]
		delete(p.starting, n)
		switch {
		case err != nil:
			if wanted {
				s.warmFailedLocked(p, err)
			}
		case !wanted || s.closing || p.dormant:
			go held.Close()
		default:
			m := &warmMember{n: n, held: held, readyAt: s.cfg.Now()}
			p.ready = append(p.ready, m)
			p.lastErr = ""
			ws.wg.Add(1)
			go s.watchWarm(p, m)
		}
		s.slotFreedLocked()
		ws.poke()
		s.mu.Unlock()
	}()
}

// warmFailedLocked backs a pool off after a member failed; s.mu is held.
func (s *Supervisor) warmFailedLocked(p *warmPool, err error) {
	p.failures++
	wait := WarmRetryMin << min(p.failures-1, 6)
	wait = min(wait, WarmRetryMax)
	p.retryAt = s.cfg.Now().Add(wait)
	p.lastErr = err.Error()
	s.log.Warn("a warm runtime did not start; trying again later", "pool", p.spec.String(), "retry_in", wait, "error", err)
}

// watchWarm replaces a member that dies while it waits for a spawn.
func (s *Supervisor) watchWarm(p *warmPool, m *warmMember) {
	defer s.warm.wg.Done()
	select {
	case <-m.held.Exited():
	case <-s.warm.stop:
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range p.ready {
		if r != m {
			continue
		}
		p.ready = append(p.ready[:i:i], p.ready[i+1:]...)
		go m.held.Close()
		if s.cfg.Now().Sub(m.readyAt) < warmShortLife {
			s.warmFailedLocked(p, errors.New("the warm runtime's plugin exited soon after it started"))
		} else {
			p.failures = 0
		}
		s.slotFreedLocked()
		s.warm.poke()
		return
	}
}

// stopWarm stops every member and the fill loop; the supervisor is closing.
func (s *Supervisor) stopWarm() {
	ws := s.warm
	s.mu.Lock()
	var closing []*hostrt.HeldSession
	for _, p := range ws.pools {
		for _, m := range p.ready {
			closing = append(closing, m.held)
		}
		p.ready = nil
		for n, cancel := range p.starting {
			cancel()
			delete(p.starting, n)
		}
	}
	s.mu.Unlock()
	close(ws.stop)
	closeHeld(closing)
	ws.wg.Wait()
	// A member that finished starting after the stop closed itself (closing
	// is set); one more look for any that slipped in between. Waited for
	// like the others: the supervisor must not exit while a member's
	// plugin and CLI still run.
	closing = closing[:0]
	s.mu.Lock()
	for _, p := range ws.pools {
		for _, m := range p.ready {
			closing = append(closing, m.held)
		}
		p.ready = nil
	}
	s.mu.Unlock()
	closeHeld(closing)
}

// closeHeld closes the held sessions at once, each stopping its plugin,
// and returns when all have.
func closeHeld(held []*hostrt.HeldSession) {
	var wg sync.WaitGroup
	for _, h := range held {
		wg.Add(1)
		go func() { defer wg.Done(); h.Close() }()
	}
	wg.Wait()
}

// warmSummary is the pools as status {} shows them: each spec with its
// ready and starting members.
func (s *Supervisor) warmSummary() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]map[string]any, 0, len(s.warm.pools))
	for _, p := range s.warm.pools {
		e := map[string]any{
			"pool": p.spec.String(), "backend": p.key.backend, "model": p.key.model, "agent": p.key.agent,
			"dir": p.key.dir, "count": p.spec.Count, "ready": len(p.ready), "starting": len(p.starting), "dormant": p.dormant,
		}
		if p.lastErr != "" {
			e["last_error"] = p.lastErr
		}
		out = append(out, e)
	}
	return out
}

// warmMembers lists the ready members apart from the runtimes (`list
// {"warm":true}`): none of them is a runtime until a spawn takes it.
func (s *Supervisor) warmMembers() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, p := range s.warm.pools {
		for _, m := range p.ready {
			e := map[string]any{
				"warm_id": "warm_" + strconv.Itoa(m.n), "status": "warm", "pool": p.spec.String(),
				"backend": p.key.backend, "model": p.key.model, "agent": p.key.agent, "dir": p.key.dir,
				"session_id": m.held.SessionID(), "ready_at": m.readyAt.UnixMilli(),
			}
			out = append(out, e)
		}
	}
	return out
}
