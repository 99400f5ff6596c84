package turn_test

import (
	"context"
	"fmt"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/turn"
)

// toySession is a session of a runtime that answers each prompt with what
// arrives on replies. It embeds *turn.Runner, which supplies Cancel (for
// runtime.Session) and TurnStarting (for sdk/plugin); the session writes
// only Prompt and Close.
type toySession struct {
	*turn.Runner
	replies chan string
}

func newToySession() *toySession {
	s := &toySession{replies: make(chan string, 1)}
	s.Runner = turn.New(turn.Config{
		Backend: "toy",
		// Interrupt is how this runtime is asked to stop a turn (a
		// session/cancel, an abort command…). Prompt below also watches
		// Turn.Cancelled, so there is nothing more to send here.
		Interrupt: func(*turn.Turn) { fmt.Println("runtime asked to stop") },
	})
	return s
}

// Prompt is the shape every backend's Prompt takes with a Runner: Begin,
// defer End, end at once when the turn begins cancelled, then wait for the
// runtime's answer or the cancel.
func (s *toySession) Prompt(ctx context.Context, in runtime.Turn) (runtime.TurnResult, error) {
	t, err := s.Begin(ctx)
	if err != nil { // closed, busy, or the runtime is gone
		return runtime.TurnResult{StopReason: runtime.StopError}, err
	}
	defer s.End(t)
	if t.IsCancelled() { // a Cancel came while the Prompt was on its way
		return runtime.TurnResult{StopReason: runtime.StopCancelled}, nil
	}
	select {
	case reply := <-s.replies:
		return runtime.TurnResult{StopReason: runtime.StopEndTurn, FinalOutput: reply, HasFinalOutput: true}, nil
	case <-t.Cancelled():
		return runtime.TurnResult{StopReason: runtime.StopCancelled}, nil
	}
}

// Close stops the turn in flight, then the runtime.
func (s *toySession) Close(context.Context) error {
	s.Runner.Close(func() { fmt.Println("runtime stopped") })
	return nil
}

// A session embeds a Runner and gets the turn lifecycle the host relies
// on: one turn at a time, a Cancel kept for a turn that is still
// starting, and Close in order.
func ExampleRunner() {
	ctx := context.Background()
	s := newToySession()

	// A turn the runtime answers.
	s.replies <- "hello"
	res, _ := s.Prompt(ctx, runtime.Turn{ID: "t1", Text: "say hello"})
	fmt.Println(res.StopReason, res.FinalOutput)

	// The host sends Prompt, then Cancel at once. sdk/plugin calls
	// TurnStarting when the Prompt arrives, so the Cancel that overtakes
	// it is kept for the turn rather than lost: the turn begins cancelled,
	// and the runtime is never asked anything.
	s.TurnStarting()
	_ = s.Cancel(ctx)
	res, _ = s.Prompt(ctx, runtime.Turn{ID: "t2", Text: "never seen"})
	fmt.Println(res.StopReason)

	// A Cancel while a turn runs reaches the runtime through Interrupt.
	done := make(chan runtime.TurnResult)
	go func() {
		res, _ := s.Prompt(ctx, runtime.Turn{ID: "t3", Text: "think for ever"})
		done <- res
	}()
	for s.Current() == nil { // wait until the turn has begun
		time.Sleep(time.Millisecond)
	}
	_ = s.Cancel(ctx)
	fmt.Println((<-done).StopReason)

	_ = s.Close(ctx)
	_, err := s.Prompt(ctx, runtime.Turn{ID: "t4"})
	fmt.Println(err != nil)

	// Output:
	// end_turn hello
	// cancelled
	// runtime asked to stop
	// cancelled
	// runtime stopped
	// true
}
