package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/permission"
	"github.com/avenor-go/avenor/host/sandbox"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// answerAll answers every request with one option at once, as a person
// would through the control socket.
type answerAll struct{ option, kind string }

func (a answerAll) Record(_ context.Context, req sdk.PermissionRequest, emit func(event.Event)) func(context.Context) (sdk.PermissionDecision, error) {
	emit(permission.RequestEvent(req, permission.ResolverReserved))
	emit(permission.ResponseEvent(req.ID, a.option, a.kind, permission.SourceControl))
	return func(context.Context) (sdk.PermissionDecision, error) {
		return sdk.PermissionDecision{Outcome: sdk.OutcomeSelected, OptionID: a.option, Kind: sdk.DecisionKind(a.kind)}, nil
	}
}

// recoverFixture is a run under a workspace sandbox (the scripted
// backend's say and sleep run no tool inside it) with recovery on, whose
// Widen records what it was given and answers with widen; and a directory
// beyond the sandbox's writable paths.
type recoverFixture struct {
	*runFixture
	beyond string
	mu     sync.Mutex
	widens [][]sandbox.Widening
}

func newRecoverFixture(t *testing.T, widen func() error) *recoverFixture {
	// Beyond the sandbox's own /tmp, which is never widened.
	beyond, err := os.MkdirTemp("/var/tmp", "avenor-recover-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(beyond) })
	f := &recoverFixture{runFixture: newFixture(t, "sleep 1s\nsay done"), beyond: beyond}
	real, err := filepath.EvalSymlinks(f.beyond)
	if err != nil {
		t.Fatal(err)
	}
	f.beyond = real
	f.opts.Sandbox = sdk.Sandbox{Profile: sdk.SandboxWorkspace, Mechanism: sdk.MechanismBubblewrap, Writable: []string{f.opts.Dir}}
	f.opts.SandboxRecover = SandboxRecovery{On: true, Wait: 300 * time.Millisecond, Widen: func(ws []sandbox.Widening) error {
		f.mu.Lock()
		f.widens = append(f.widens, ws)
		f.mu.Unlock()
		return widen()
	}}
	return f
}

// deny starts r and reports the same denied write twice and a read
// during its turn.
func (f *recoverFixture) deny(t *testing.T, r *Runner) <-chan Result {
	t.Helper()
	done := runAsync(r)
	waitRunning(t, r)
	path := filepath.Join(f.beyond, "new.txt")
	r.SandboxDenied(sandbox.OpWrite, path, "")
	r.SandboxDenied(sandbox.OpWrite, path, "")
	r.SandboxDenied(sandbox.OpRead, filepath.Join(f.beyond, "secret"), "")
	return done
}

func (f *recoverFixture) sandboxRequests(t *testing.T) []map[string]any {
	var out []map[string]any
	for _, ev := range f.events(t) {
		if ev["event"] == "permission.request" && ev["kind"] == SandboxRequestKind {
			out = append(out, ev)
		}
	}
	return out
}

// TestSandboxRecoverUnanswered: a request nobody answers within the wait
// is no approval: one request for the path (the repeat and the read are
// not asked about), a warning, nothing widened, and the turn ends as it
// did.
func TestSandboxRecoverUnanswered(t *testing.T) {
	f := newRecoverFixture(t, func() error { return errors.New("not called") })
	r := New(f.opts, nil)
	res := waitResult(t, f.deny(t, r))
	if res.Restarted || res.StopReason != sdk.StopEndTurn || res.ExitCode != 0 {
		t.Fatalf("result %+v, want the turn ended as it did", res)
	}
	reqs := f.sandboxRequests(t)
	if len(reqs) != 1 || reqs[0]["path"] != filepath.Join(f.beyond, "new.txt") || reqs[0]["allow_write"] != f.beyond || reqs[0]["requires_user_input"] != true {
		t.Fatalf("sandbox requests %v; want one for the write, its directory to allow", reqs)
	}
	warned := false
	for _, ev := range f.events(t) {
		if ev["event"] == "avenor.warning" && ev["source"] == "sandbox" && strings.Contains(ev["message"].(string), "nothing was widened") {
			warned = true
		}
	}
	if !warned || len(f.widens) != 0 {
		t.Errorf("warned %v, widened %v; want a warning and nothing widened", warned, f.widens)
	}
	if ends := sessionEnds(f.events(t)); len(ends) != 1 || ends[0] != "end_turn:done" {
		t.Errorf("session.end %v, want one end_turn", ends)
	}
}

// TestSandboxRecoverRejected: a rejection widens nothing; an approval
// whose widening fails says so and the turn ends as it did.
func TestSandboxRecoverRejected(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  answerAll
		widened int
	}{
		{"rejected", answerAll{SandboxRejectOption, sdk.KindReject}, 0},
		{"approved, widening refused", answerAll{SandboxAllowOption, sdk.KindAllowOnce}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRecoverFixture(t, func() error { return errors.New("a restart is already under way") })
			r := New(f.opts, func(string) Permissions { return tc.answer })
			res := waitResult(t, f.deny(t, r))
			if res.Restarted || res.StopReason != sdk.StopEndTurn {
				t.Fatalf("result %+v, want the turn ended as it did", res)
			}
			if len(f.widens) != tc.widened {
				t.Fatalf("widened %v, want %d call", f.widens, tc.widened)
			}
			if tc.widened == 1 && (len(f.widens[0]) != 1 || f.widens[0][0].AllowWrite != f.beyond) {
				t.Errorf("widened by %v, want exactly %s", f.widens[0], f.beyond)
			}
		})
	}
}

// TestSandboxRecoverApprovedRestarts: an approval hands the widening to
// Widen, whose restart ends the run for its owner: Restarted, no
// session.end, no sentinel.
func TestSandboxRecoverApprovedRestarts(t *testing.T) {
	var r *Runner
	f := newRecoverFixture(t, func() error { return r.Restart() })
	r = New(f.opts, func(string) Permissions { return answerAll{SandboxAllowOption, sdk.KindAllowOnce} })
	res := waitResult(t, f.deny(t, r))
	if !res.Restarted || res.SessionID == "" {
		t.Fatalf("result %+v, want Restarted on its session", res)
	}
	if ends := sessionEnds(f.events(t)); len(ends) != 0 {
		t.Errorf("session.end %v after a restart, want none", ends)
	}
	if _, err := os.Stat(f.opts.SentinelPath); !os.IsNotExist(err) {
		t.Errorf("a restarted run wrote its sentinel (stat: %v)", err)
	}
}

// TestSandboxRecoverTaken: a widening the run asked about before (Take
// false) is not asked again.
func TestSandboxRecoverTaken(t *testing.T) {
	f := newRecoverFixture(t, func() error { return nil })
	f.opts.SandboxRecover.Take = func(string) bool { return false }
	r := New(f.opts, func(string) Permissions { return answerAll{SandboxAllowOption, sdk.KindAllowOnce} })
	res := waitResult(t, f.deny(t, r))
	if res.Restarted || len(f.sandboxRequests(t)) != 0 || len(f.widens) != 0 {
		t.Fatalf("result %+v, requests %v, widened %v; want nothing asked", res, f.sandboxRequests(t), f.widens)
	}
}

// TestSandboxRecoverRefusesBackend: CheckBackend's refusal is checkOpen's.
func TestSandboxRecoverRefusesBackend(t *testing.T) {
	info := sdk.BackendInfo{Name: "b", Capabilities: sdk.Supports(sdk.CapSandbox)}
	o := Options{Sandbox: sdk.Sandbox{Profile: sdk.SandboxWorkspace, Mechanism: sdk.MechanismBubblewrap},
		SandboxRecover: SandboxRecovery{On: true, CheckBackend: func(sdk.BackendInfo) error { return errors.New("cannot resume") }}}
	if err := checkOpen(info, o); err == nil || err.Error() != "cannot resume" {
		t.Fatalf("checkOpen = %v, want the recovery's refusal", err)
	}
	o.SandboxRecover.On = false
	if err := checkOpen(info, o); err != nil {
		t.Fatalf("checkOpen without recovery = %v", err)
	}
}

// TestSandboxRecoverInterrupted: an interrupt_and_prompt while a sandbox
// request waits withdraws it: the turn ends as it did, the interrupt's
// text runs next, nothing is widened.
func TestSandboxRecoverInterrupted(t *testing.T) {
	f := newRecoverFixture(t, func() error { return errors.New("not called") })
	f.opts.SandboxRecover.Wait = time.Minute
	r := New(f.opts, nil)
	done := f.deny(t, r)
	for deadline := time.Now().Add(10 * time.Second); !r.Status().PendingPermission; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the sandbox request never waited")
		}
	}
	if err := r.InterruptAndPrompt("say next", true); err != nil {
		t.Fatal(err)
	}
	res := waitResult(t, done)
	if res.Restarted || res.StopReason != sdk.StopEndTurn || len(f.widens) != 0 {
		t.Fatalf("result %+v, widened %v; want the interrupt's turn ended, nothing widened", res, f.widens)
	}
	if ends := sessionEnds(f.events(t)); len(ends) != 2 || ends[1] != "end_turn:next" {
		t.Errorf("session.end %v; want the denied turn's, then the interrupt's", ends)
	}
}
