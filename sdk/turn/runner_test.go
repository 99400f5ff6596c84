package turn

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCancelWhileStartingIsKeptForTheTurn(t *testing.T) {
	var interrupts atomic.Int32
	r := New(Config{Backend: "test", Interrupt: func(*Turn) { interrupts.Add(1) }})
	r.TurnStarting()
	_ = r.Cancel(context.Background())
	tr, err := r.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer r.End(tr)
	if !tr.IsCancelled() {
		t.Fatal("a Cancel between TurnStarting and Begin was dropped")
	}
	if n := interrupts.Load(); n != 0 {
		t.Errorf("Interrupt ran %d times for a turn that had not asked the runtime anything", n)
	}
}

func TestIdleCancelDoesNothing(t *testing.T) {
	r := New(Config{})
	_ = r.Cancel(context.Background())
	tr, err := r.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer r.End(tr)
	if tr.IsCancelled() {
		t.Fatal("a Cancel while no turn ran or started cancelled the next turn")
	}
}

func TestCancelOnceInterruptsAndStartsTheGrace(t *testing.T) {
	var interrupts, overdue atomic.Int32
	r := New(Config{Interrupt: func(*Turn) { interrupts.Add(1) }, Grace: 20 * time.Millisecond,
		OnOverdue: func(*Turn) { overdue.Add(1) }})
	tr, err := r.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_ = r.Cancel(context.Background())
	_ = r.Cancel(context.Background())
	select {
	case <-tr.Overdue():
	case <-time.After(2 * time.Second):
		t.Fatal("Overdue was not closed after the grace")
	}
	r.End(tr)
	if interrupts.Load() != 1 || overdue.Load() != 1 {
		t.Errorf("interrupts=%d overdue=%d, want 1 and 1", interrupts.Load(), overdue.Load())
	}
	if tr.Context().Err() == nil {
		t.Error("the turn's context did not end")
	}
}

func TestEndStopsTheGrace(t *testing.T) {
	var overdue atomic.Int32
	r := New(Config{Grace: 20 * time.Millisecond, OnOverdue: func(*Turn) { overdue.Add(1) }})
	tr, _ := r.Begin(context.Background())
	r.CancelTurn(tr)
	r.End(tr)
	time.Sleep(60 * time.Millisecond)
	if overdue.Load() != 0 {
		t.Error("OnOverdue ran for a turn that had ended")
	}
}

func TestPromptContextEndingCancels(t *testing.T) {
	r := New(Config{})
	ctx, cancel := context.WithCancel(context.Background())
	tr, _ := r.Begin(ctx)
	defer r.End(tr)
	cancel()
	select {
	case <-tr.Cancelled():
	case <-time.After(2 * time.Second):
		t.Fatal("Prompt's context ending did not cancel the turn")
	}
}

func TestBeginRefuses(t *testing.T) {
	r := New(Config{Backend: "test"})
	tr, _ := r.Begin(context.Background())
	if _, err := r.Begin(context.Background()); err == nil || !strings.Contains(err.Error(), ErrBusy.Error()) {
		t.Errorf("second Begin: %v, want %v", err, ErrBusy)
	}
	r.End(tr)
	r.MarkDead(context.Canceled)
	if _, err := r.Begin(context.Background()); err == nil || !strings.Contains(err.Error(), ErrGone.Error()) {
		t.Errorf("Begin after MarkDead: %v, want %v", err, ErrGone)
	}
	r.Close(nil)
	if !r.Closed() {
		t.Error("Closed is false after Close")
	}
}

func TestCloseCancelsThenStops(t *testing.T) {
	var order []string
	r := New(Config{Interrupt: func(*Turn) { order = append(order, "interrupt") }})
	tr, _ := r.Begin(context.Background())
	r.Close(func() { order = append(order, "stop") })
	r.Close(func() { order = append(order, "stop again") })
	r.End(tr)
	if got := strings.Join(order, ","); got != "interrupt,stop" {
		t.Errorf("Close did %s, want interrupt,stop", got)
	}
	if _, err := r.Begin(context.Background()); err == nil {
		t.Error("Begin after Close succeeded")
	}
}
