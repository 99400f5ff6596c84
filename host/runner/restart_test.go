package runner

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/plugins"
)

// launchRecorder is inProcess remembering every plugin it launched.
type launchRecorder struct {
	mu  sync.Mutex
	all []*plugins.Launched
}

func (lr *launchRecorder) launch(ctx context.Context) (*plugins.Launched, error) {
	l, err := inProcess(ctx)
	if err == nil {
		lr.mu.Lock()
		lr.all = append(lr.all, l)
		lr.mu.Unlock()
	}
	return l, err
}

func (lr *launchRecorder) launched() []*plugins.Launched {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return append([]*plugins.Launched(nil), lr.all...)
}

// waitRunning waits until r's turn runs in a session it knows.
func waitRunning(t *testing.T, r *Runner) Status {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		st := r.Status()
		if st.TurnState == TurnRunning && st.SessionID != "" {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn never ran: %+v", st)
		}
	}
}

func runAsync(r *Runner) <-chan Result {
	done := make(chan Result, 1)
	go func() { done <- r.Run(context.Background()) }()
	return done
}

func waitResult(t *testing.T, done <-chan Result) Result {
	t.Helper()
	select {
	case res := <-done:
		return res
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not end")
		return Result{}
	}
}

// TestRestartStopsTheAttemptNotTheRun: Restart ends the run for its owner
// — the plugin is stopped, Run returns Restarted with the session id — and
// for nobody else: no session.end for the stopped turn, no retry (retries
// are allowed), no sentinel.
func TestRestartStopsTheAttemptNotTheRun(t *testing.T) {
	f := newFixture(t, "say before\nsleep 60s")
	f.opts.MaxRetries = 2
	var lr launchRecorder
	f.opts.Launch = lr.launch
	r := New(f.opts, nil)
	done := runAsync(r)
	st := waitRunning(t, r)
	if err := r.Prompt("say queued"); err != nil {
		t.Fatal(err)
	}
	if err := r.Restart(); err != nil {
		t.Fatalf("Restart = %v", err)
	}
	if err := r.Restart(); !errors.Is(err, ErrStopping) {
		t.Errorf("a second Restart = %v, want ErrStopping", err)
	}
	res := waitResult(t, done)
	if !res.Restarted || res.SessionID != st.SessionID || res.Held != nil || len(res.Queued) != 1 || res.Queued[0] != "say queued" {
		t.Fatalf("result %+v, want Restarted on session %s with the queued prompt", res, st.SessionID)
	}
	for _, typ := range f.types(t) {
		if typ == "session.end" || typ == "avenor.retry" {
			t.Errorf("a restarted run wrote %s: %v", typ, f.types(t))
		}
	}
	if _, err := os.Stat(f.opts.SentinelPath); !os.IsNotExist(err) {
		t.Errorf("a restarted run wrote its sentinel (stat: %v)", err)
	}
	if len(f.sleeps) != 0 {
		t.Errorf("a restarted run waited to retry: %v", f.sleeps)
	}
	ls := lr.launched()
	if len(ls) != 1 || pluginAlive(ls[0]) {
		t.Fatalf("launched %d plugins; the restarted attempt's must be stopped", len(ls))
	}
	if err := r.Restart(); !errors.Is(err, ErrRunEnded) {
		t.Errorf("Restart after the run = %v, want ErrRunEnded", err)
	}
}

// TestRestartRefused: a run not begun, or stopping for another reason, is
// not restarted, and ends as it would have.
func TestRestartRefused(t *testing.T) {
	f := newFixture(t, "say hi")
	if err := New(f.opts, nil).Restart(); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Restart before Run = %v, want ErrNotRunning", err)
	}

	// A turn that ignores the cancel keeps the run stopping for the
	// cancel budget.
	f = newFixture(t, "ignore-cancel\nsleep 60s")
	r := New(f.opts, nil)
	done := runAsync(r)
	waitRunning(t, r)
	r.Cancel()
	if err := r.Restart(); !errors.Is(err, ErrStopping) || !strings.Contains(err.Error(), ErrInterrupted.Error()) {
		t.Errorf("Restart of a cancelled run = %v, want ErrStopping naming the interrupt", err)
	}
	res := waitResult(t, done)
	if res.Restarted || res.ExitCode != 130 {
		t.Fatalf("result %+v, want cancelled (130), not restarted", res)
	}
	types := f.types(t)
	if types[len(types)-1] != "session.end" {
		t.Errorf("a cancelled run's last event is %s", types[len(types)-1])
	}
	if _, err := os.Stat(f.opts.SentinelPath); err != nil {
		t.Errorf("a cancelled run wrote no sentinel: %v", err)
	}
}

// TestRestartAfterTheTurnEnded: a restart asked once the turn has ended on
// its own — its session.end written, the run not over yet — keeps that
// session.end and still restarts the run: no sentinel.
func TestRestartAfterTheTurnEnded(t *testing.T) {
	f := newFixture(t, "say hi")
	var r *Runner
	restarted := make(chan error, 1)
	f.opts.OnEvent = func(ev event.Event) {
		if ev.Type() == event.TypeSessionEnd {
			restarted <- r.Restart()
		}
	}
	r = New(f.opts, nil)
	res := r.Run(context.Background())
	if err := <-restarted; err != nil {
		t.Fatalf("Restart = %v", err)
	}
	if !res.Restarted || res.StopReason != "end_turn" || res.SessionID == "" {
		t.Fatalf("result %+v, want Restarted after an end_turn", res)
	}
	types := f.types(t)
	if types[len(types)-1] != "session.end" {
		t.Errorf("the ended turn lost its session.end: %v", types)
	}
	if _, err := os.Stat(f.opts.SentinelPath); !os.IsNotExist(err) {
		t.Errorf("a restarted run wrote its sentinel (stat: %v)", err)
	}
}
