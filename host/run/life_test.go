package run

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	hostrt "github.com/avenor-go/avenor/host/runner"
)

// fakeOwner is a supervisor of one runtime. Every callback reads the
// runtime back (Facts, Record), as a supervisor does: a callback made with
// the runtime's lock held deadlocks the test.
type fakeOwner struct {
	rt    *Runtime
	admit error

	mu                 sync.Mutex
	admitted, refused  int
	kept               *hostrt.HeldSession
	ended              chan hostrt.Result
	changed, durableAt int
}

func (o *fakeOwner) Changed() {
	_ = o.rt.Record()
	o.mu.Lock()
	o.changed++
	o.mu.Unlock()
}

func (o *fakeOwner) Durable() error {
	r := o.rt.Record()
	o.mu.Lock()
	o.durableAt++
	o.mu.Unlock()
	if r.ID != "rt_1" {
		return errors.New("record of another runtime")
	}
	return nil
}

func (o *fakeOwner) Stopping() error { return nil }
func (o *fakeOwner) Gone() error     { return errors.New("gone") }

func (o *fakeOwner) Admit() error {
	_ = o.rt.Facts()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.admit == nil {
		o.admitted++
	}
	return o.admit
}

func (o *fakeOwner) Refused() {
	o.mu.Lock()
	o.refused++
	o.mu.Unlock()
}

func (o *fakeOwner) Ended(res hostrt.Result) []*hostrt.HeldSession {
	kept, drop := o.rt.Settle(res, true, time.Now().UnixMilli())
	o.mu.Lock()
	o.kept = kept
	o.mu.Unlock()
	o.ended <- res
	if drop != nil {
		return []*hostrt.HeldSession{drop}
	}
	return nil
}

func (o *fakeOwner) Unkept(h *hostrt.HeldSession) {
	_ = o.rt.Facts()
	o.mu.Lock()
	if h == nil || o.kept == h {
		o.kept = nil
	}
	o.mu.Unlock()
}

func (o *fakeOwner) PhaseSlot(context.Context) (func(), error) { return func() {}, nil }

func (o *fakeOwner) Describe(e map[string]any) { e["owner"] = true }

// TestSupervisedRuntimeParksAndFollowsUp: a supervised runtime runs its
// turn in the background, parks keeping its plugin, takes a follow-up in
// that plugin once its owner admitted it and its record was made durable,
// and tells its owner at each step without its own lock held (the owner
// reads it back from every callback). A follow-up the owner refuses runs
// nothing and leaves it parked; one it admits after that still runs.
func TestSupervisedRuntimeParksAndFollowsUp(t *testing.T) {
	spec := scriptedSpec(t, "")
	spec.RuntimeID, spec.EventLog = "rt_1", filepath.Join(t.TempDir(), "events.ndjson")
	spec.Options.SentinelPath = filepath.Join(t.TempDir(), "s.done")
	owner := &fakeOwner{ended: make(chan hostrt.Result, 4)}
	rt, err := New(spec, Deps{Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	owner.rt = rt
	defer func() {
		if h, _ := rt.Retire(false); h != nil {
			h.Close()
		}
		rt.Close()
	}()
	wait := func(what string) hostrt.Result {
		t.Helper()
		select {
		case res := <-owner.ended:
			return res
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: the run did not end", what)
			return hostrt.Result{}
		}
	}

	rt.Go(Turn{Prompt: "say one"})
	if res := wait("first turn"); res.ExitCode != 0 {
		t.Fatalf("first turn: %+v", res)
	}
	f := rt.Facts()
	if f.State != Parked || f.SessionID == "" || f.Runs != 1 || !f.Kept || f.Refusal != nil {
		t.Fatalf("after the first turn: %+v", f)
	}
	if r := rt.Record(); r.State != RecordParked || r.SessionID != f.SessionID {
		t.Fatalf("record after the first turn: %+v", r)
	}
	if e := rt.Status().(map[string]any); e["status"] != StatusIdle || e["owner"] != true {
		t.Fatalf("entry after the first turn: %v", e)
	}

	owner.mu.Lock()
	owner.admit = errors.New("no slot")
	owner.mu.Unlock()
	if err := rt.FollowUp(context.Background(), "say refused", false, false); err == nil || err.Error() != "no slot" {
		t.Fatalf("follow-up the owner refused: %v", err)
	}
	if f := rt.Facts(); f.State != Parked || f.Runs != 1 || !f.Kept {
		t.Fatalf("after a refused follow-up: %+v", f)
	}

	owner.mu.Lock()
	owner.admit = nil
	owner.mu.Unlock()
	if err := rt.Prompt(context.Background(), "say two", false, false); err != nil {
		t.Fatalf("follow-up: %v", err)
	}
	if res := wait("follow-up"); res.ExitCode != 0 || res.SessionID != f.SessionID {
		t.Fatalf("follow-up: %+v, want session %s continued", res, f.SessionID)
	}
	if final, _ := rt.FinalOutput(); final != "two" {
		t.Errorf("final output %q, want two", final)
	}
	owner.mu.Lock()
	defer owner.mu.Unlock()
	if owner.admitted != 1 || owner.refused != 0 || owner.durableAt < 2 || owner.changed == 0 {
		t.Errorf("owner heard admitted %d refused %d durable %d changed %d", owner.admitted, owner.refused, owner.durableAt, owner.changed)
	}
}

// TestSupervisedRuntimeEndedRefusesFollowUp: a turn that did not end well
// ends the runtime: its plugin is not kept, and a follow-up is refused
// with ErrRuntimeEnded before the owner is asked for a slot.
func TestSupervisedRuntimeEndedRefusesFollowUp(t *testing.T) {
	spec := scriptedSpec(t, "")
	spec.RuntimeID, spec.EventLog = "rt_1", filepath.Join(t.TempDir(), "events.ndjson")
	spec.Options.SentinelPath = filepath.Join(t.TempDir(), "s.done")
	owner := &fakeOwner{ended: make(chan hostrt.Result, 1)}
	rt, err := New(spec, Deps{Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	owner.rt = rt
	defer rt.Close()
	rt.Go(Turn{Prompt: "fail on purpose"})
	select {
	case res := <-owner.ended:
		if res.ExitCode == 0 {
			t.Fatalf("a failed turn ended with %+v", res)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not end")
	}
	if f := rt.Facts(); f.Kept || !errors.Is(f.Refusal, ErrRuntimeEnded) {
		t.Fatalf("after a failed turn: %+v", f)
	}
	if err := rt.FollowUp(context.Background(), "say more", false, false); !errors.Is(err, ErrRuntimeEnded) {
		t.Fatalf("follow-up of an ended runtime: %v", err)
	}
	if r := rt.Record(); r.State != RecordEnded {
		t.Errorf("record state %q, want ended", r.State)
	}
	owner.mu.Lock()
	defer owner.mu.Unlock()
	if owner.admitted != 0 {
		t.Errorf("the owner was asked for a slot %d times for a refused follow-up", owner.admitted)
	}
}
