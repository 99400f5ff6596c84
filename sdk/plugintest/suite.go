package plugintest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// suite is one run of the kit.
type suite struct {
	h      Harness
	target *target        // nil for a bare backend (Verify)
	client *plugin.Client // the plugin the shared tiers use; nil for a bare backend
}

// all runs the handshake tier, then every tier of each backend.
func (s *suite) all(k sink) {
	k.group("handshake", s.handshakeChecks)
	for _, bi := range s.client.Backends() {
		if !s.h.wants(bi.Name) {
			continue
		}
		b, _ := s.client.Backend(bi.Name)
		k.group(bi.Name, func(k sink) { s.backendChecks(k, b) })
	}
}

// backendChecks runs the tiers of one backend.
func (s *suite) backendChecks(k sink, b runtime.Backend) {
	c := &bcase{s: s, b: b, info: b.Info()}
	k.group("describe", c.describeChecks)
	k.group("session", c.sessionChecks)
	k.group("permission", c.permissionChecks)
	k.group("resume", c.resumeChecks)
	k.group("restart", c.restartChecks)
}

// bcase is one backend under check.
type bcase struct {
	s    *suite
	b    runtime.Backend
	info runtime.BackendInfo
	// ready is Check's answer; nil until the describe tier asked.
	ready *runtime.Readiness
}

// advertised reports whether a capability is claimed at all.
func (c *bcase) advertised(capability runtime.Capability) bool {
	return c.info.Capability(capability) != runtime.Unsupported
}

// gate skips the checks that run turns when the runtime is not usable here.
func (c *bcase) gate() error {
	if c.ready == nil {
		return skipf("Check did not answer")
	}
	if !c.ready.Ready {
		return skipf("runtime not ready here: %s", c.ready.Message)
	}
	if !c.advertised(runtime.CapPrompt) {
		return skipf("%s is not advertised", runtime.CapPrompt)
	}
	return nil
}

// check is a check that runs turns: skipped when the runtime is not ready,
// with the session cleaned up after it.
func (c *bcase) check(k sink, name string, fn func(x *run) error) {
	k.check(name, func(e *env) error {
		if why, ok := c.s.h.Skip[name]; ok {
			return skipf("skipped by the harness: %s", why)
		}
		if err := c.gate(); err != nil {
			return err
		}
		x := &run{c: c, e: e}
		defer x.cleanup()
		return fn(x)
	})
}

// capCheck is a check of an optional capability: skipped when the backend
// does not advertise it, held to it when it does. A capability advertised
// as unverified is probed, and a failure is reported as a skip saying so.
func (c *bcase) capCheck(k sink, name string, capability runtime.Capability, fn func(x *run) error) {
	c.check(k, name, func(x *run) error {
		level := c.info.Capability(capability)
		if level == runtime.Unsupported {
			return skipf("%s is not advertised", capability)
		}
		err := fn(x)
		var skip skipError
		if err != nil && level == runtime.Unverified && !errors.As(err, &skip) {
			return skipf("%s is advertised as unverified, and it does not hold: %v", capability, err)
		}
		return err
	})
}

// run is the state of one check: what it opened and started, cleaned up
// when it ends so that no session, plugin or goroutine outlives it.
type run struct {
	c        *bcase
	e        *env
	sessions []runtime.Session
	clients  []*plugin.Client
	turns    []*turnRun
	// offer, when set, changes the next Open's request (a permission mode
	// or launch-context field to offer).
	offer func(*runtime.OpenRequest)
}

func (x *run) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), x.c.s.h.TurnTimeout)
	defer cancel()
	for _, s := range x.sessions {
		_ = s.Close(ctx)
	}
	for _, c := range x.clients {
		c.Kill()
	}
	for _, t := range x.turns {
		<-t.done // every turn's context ends within TurnTimeout
	}
}

// prompt is the harness's prompt for kind. When it has none the check is
// skipped — or fails, when the backend advertises the capability the turn
// would show.
func (x *run) prompt(kind TurnKind, capability runtime.Capability) (string, error) {
	p, ok := x.c.s.h.Prompt(x.c.info.Name, kind)
	if ok {
		return p, nil
	}
	if capability != "" && x.c.info.Capability(capability) != runtime.Unsupported {
		return "", fmt.Errorf("the backend advertises %s, but the harness gives no %s prompt to show it: give Harness.Prompt one for %q", capability, kind, x.c.info.Name)
	}
	return "", skipf("the harness gives no %s prompt", kind)
}

// open opens a session of backend b (nil: the backend under check) with a
// fresh directory; stateDir "" gets a fresh one too.
func (x *run) open(b runtime.Backend, rec *recorder, stateDir, resume string) (runtime.Session, error) {
	if b == nil {
		b = x.c.b
	}
	dir, err := x.e.mkdir()
	if err != nil {
		return nil, err
	}
	if stateDir == "" {
		if stateDir, err = x.e.mkdir(); err != nil {
			return nil, err
		}
	}
	req := runtime.OpenRequest{Backend: x.c.info.Name, Dir: dir, StateDir: stateDir, RunID: "plugintest", ResumeSessionID: resume}
	x.c.s.h.Open(&req)
	if x.offer != nil {
		x.offer(&req)
	}
	ctx, cancel := context.WithTimeout(x.e.ctx, x.c.s.h.TurnTimeout)
	defer cancel()
	sess, err := b.Open(ctx, req, rec)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("Open did not answer within %v", x.c.s.h.TurnTimeout)
		}
		return nil, err
	}
	x.sessions = append(x.sessions, sess)
	return sess, nil
}

// mustOpen opens a new session and names a failure as Open's.
func (x *run) mustOpen(rec *recorder, stateDir string) (runtime.Session, error) {
	sess, err := x.open(nil, rec, stateDir, "")
	if err != nil {
		return nil, fmt.Errorf("Open: %w", err)
	}
	return sess, nil
}

// launch starts a fresh instance of the plugin and returns the backend
// under check in it.
func (x *run) launch() (*plugin.Client, runtime.Backend, error) {
	if x.c.s.target == nil {
		return nil, nil, skipf("a bare backend cannot be restarted; RunBinary and VerifyBinary check this")
	}
	c, err := x.c.s.target.launch(x.e.ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("launching a fresh plugin: %w", err)
	}
	x.clients = append(x.clients, c)
	b, ok := c.Backend(x.c.info.Name)
	if !ok {
		return nil, nil, fmt.Errorf("a fresh plugin does not serve %q", x.c.info.Name)
	}
	return c, b, nil
}

// crash kills a plugin launched by this check and the runtime process
// group of sess, as the host does when a plugin dies.
func (x *run) crash(c *plugin.Client, sess runtime.Session) {
	pgid := 0
	if sess != nil {
		pgid = sess.Process().PGID
	}
	crash(c)
	if pgid > 1 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

var turnSeq atomic.Int64

// turnRun is a turn in flight.
type turnRun struct {
	id    string
	done  chan struct{}
	start time.Time
	res   runtime.TurnResult
	err   error
	took  time.Duration
}

// start runs one turn in the background, bounded by TurnTimeout.
func (x *run) start(sess runtime.Session, text string) *turnRun {
	t := &turnRun{done: make(chan struct{}), start: time.Now()}
	ctx, cancel := context.WithTimeout(x.e.ctx, x.c.s.h.TurnTimeout)
	id := fmt.Sprintf("plugintest-%d", turnSeq.Add(1))
	t.id = id
	go func() {
		defer close(t.done)
		defer cancel()
		t.res, t.err = sess.Prompt(ctx, runtime.Turn{ID: id, Text: text})
		t.took = time.Since(t.start)
		if t.err != nil && ctx.Err() != nil {
			t.err = fmt.Errorf("the turn did not end within %v", x.c.s.h.TurnTimeout)
		}
	}()
	x.turns = append(x.turns, t)
	return t
}

// ended reports whether the turn ended within d.
func (t *turnRun) ended(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-t.done:
		return true
	case <-timer.C:
		return false
	}
}

// finish runs a turn to its end.
func (x *run) finish(sess runtime.Session, text string) (runtime.TurnResult, error) {
	t := x.start(sess, text)
	<-t.done
	return t.res, t.err
}

// endTurn runs a turn and fails unless it ends with end_turn.
func (x *run) endTurn(sess runtime.Session, text string, what string) error {
	res, err := x.finish(sess, text)
	if err != nil {
		return fmt.Errorf("%s: Prompt: %v", what, err)
	}
	if res.StopReason != runtime.StopEndTurn {
		return fmt.Errorf("%s ended with stop reason %q, want %q", what, res.StopReason, runtime.StopEndTurn)
	}
	return nil
}

// midTurn starts a long turn and waits until it has emitted something (or
// asked something), so that what the check does next lands mid-turn.
func (x *run) midTurn(sess runtime.Session, rec *recorder, text string) (*turnRun, error) {
	t := x.start(sess, text)
	if !rec.waitInTurn(x.e.ctx, t, func(es []entry) bool { return len(es) > 0 }) {
		<-t.done
		if t.err != nil {
			return t, fmt.Errorf("the long turn failed before it emitted anything: %v", t.err)
		}
		return t, fmt.Errorf("the long turn ended (%s) without emitting anything, so nothing can land mid-turn; a long turn must stream", t.res.StopReason)
	}
	select {
	case <-t.done:
		return t, fmt.Errorf("the long turn ended (%s, after %v) before the kit could act mid-turn; give Harness.Prompt a longer %s prompt", t.res.StopReason, t.took.Round(time.Millisecond), TurnLong)
	default:
	}
	return t, nil
}

// decide answers permission requests with the first option of a kind.
func decide(kind string) answerFunc {
	return func(req runtime.PermissionRequest) (runtime.PermissionDecision, bool) {
		for _, o := range req.Options {
			if runtime.NormalizeKind(o.Kind) == kind {
				return runtime.PermissionDecision{Outcome: runtime.OutcomeSelected, OptionID: o.ID, Kind: runtime.DecisionKind(o.Kind)}, true
			}
		}
		return runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}, true
	}
}

func cancelledAnswer(runtime.PermissionRequest) (runtime.PermissionDecision, bool) {
	return runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}, true
}
