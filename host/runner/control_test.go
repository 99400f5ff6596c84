package runner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A run that is stopping (cancelled, interrupted, timed out) takes no new
// prompt: before, one sent while the plugin was still ending its turn was
// answered accepted and then silently dropped.
func TestPromptRefusedWhileStopping(t *testing.T) {
	for _, how := range []string{"cancel", "interrupt", "timeout"} {
		t.Run(how, func(t *testing.T) {
			// The plugin ignores the cancel, so the run stays in its turn
			// for the whole CancelBudget after it began to stop.
			f := newFixture(t, "ignore-cancel\nsleep 30s")
			f.opts.CancelBudget = 2 * time.Second
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			if how == "timeout" {
				f.opts.Timeout = 300 * time.Millisecond
			}
			r := New(f.opts, nil)
			done := make(chan Result, 1)
			go func() { done <- r.Run(ctx) }()
			deadline := time.Now().Add(10 * time.Second)
			for r.Status().TurnState != TurnRunning {
				if time.Now().After(deadline) {
					t.Fatal("the turn never started")
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := r.Prompt("say queued"); err != nil {
				t.Fatalf("prompt while running: %v", err)
			}
			switch how {
			case "cancel":
				r.Cancel()
			case "interrupt":
				cancel(ErrInterrupted)
			case "timeout":
				time.Sleep(400 * time.Millisecond)
			}
			err := r.Prompt("say late")
			if !errors.Is(err, ErrStopping) || !strings.Contains(err.Error(), "takes no new prompt") {
				t.Errorf("prompt while stopping: %v", err)
			}
			if err := r.InterruptAndPrompt("say late", true); !errors.Is(err, ErrStopping) {
				t.Errorf("interrupt_and_prompt while stopping: %v", err)
			}
			select {
			case <-done:
				t.Fatal("the run ended before the prompts were tried: the test proves nothing")
			default:
			}
			res := <-done
			if res.ExitCode == 0 {
				t.Fatalf("result %+v", res)
			}
			if err := r.Prompt("say after"); !errors.Is(err, ErrRunEnded) {
				t.Errorf("prompt after the run: %v", err)
			}
		})
	}
}
