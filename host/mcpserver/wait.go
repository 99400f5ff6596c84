package mcpserver

import (
	"context"
	"time"

	"github.com/avenor-go/avenor/client"
)

// Wait conditions of avenor_status wait_for (the original's).
const (
	WaitTerminal     = "terminal"
	WaitPhaseChange  = "phase_change"
	WaitTurnComplete = "turn_complete"
	WaitPermission   = "permission"
)

// Bounds of a wait.
const (
	// WaitPoll is how often a wait reads the status when no event arrives
	// (the original polled at this pace; here the run's events wake it):
	// client.Await's pace without events, 20 client.AwaitPoll.
	WaitPoll = time.Second
	// WaitSettle is how soon after an event the status is read again; a
	// flood of events costs at most one status read per WaitSettle
	// (client.AwaitPoll, which client.Await keeps; a test pins them).
	WaitSettle = 50 * time.Millisecond
)

func validWait(c string) bool {
	switch c {
	case WaitTerminal, WaitPhaseChange, WaitTurnComplete, WaitPermission:
		return true
	}
	return false
}

// satisfied: a pending permission ends every wait (someone must answer
// it); terminal and turn_complete wait for the run's end, phase_change for
// another phase than the first look saw (or the end), permission only for
// a permission request.
func satisfied(cond string, st runStatus, firstPhase string) bool {
	if st.PendingPermission || st.Status == StatusWaiting {
		return true
	}
	switch cond {
	case WaitTerminal, WaitTurnComplete:
		return terminal(st.Status)
	case WaitPhaseChange:
		return st.Phase != firstPhase || terminal(st.Status)
	}
	return false
}

// budget is how long a wait may last: the requested seconds (0: no limit),
// clamped to MaxWait.
func (s *Server) budget(seconds int) (time.Duration, bool) {
	d := time.Duration(seconds) * time.Second
	if s.o.MaxWait > 0 && (d == 0 || d > s.o.MaxWait) {
		return s.o.MaxWait, true
	}
	return d, false
}

// wait reads the run's status until cond holds or the budget passes
// (timed_out). A live run is awaited with client.Await on a connection of
// its own (a connection subscribes once): the run's events wake it, the
// status is the judge. A run whose supervisor is gone, or goes away during
// the wait, has its status (the sentinel's) read every WaitPoll instead.
func (s *Server) wait(ctx context.Context, r *resolved, cond string, seconds int) (runStatus, error) {
	d, clamped := s.budget(seconds)
	st, err := s.status(ctx, r)
	if err != nil {
		return st, err
	}
	first := st.Phase
	if satisfied(cond, st, first) {
		return st, nil
	}
	wctx := ctx
	if d > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	if r.live() {
		if sc, err := client.Dial(wctx, r.conn.socket); err == nil {
			_, err = sc.Await(wctx, r.rec.RuntimeID, client.AwaitOptions{
				Stop: func(rt client.Runtime) bool { return satisfied(cond, fromRuntime(r.rec, rt), first) },
			})
			sc.Close()
			if err == nil {
				return s.status(ctx, r)
			}
		}
	}
	poll := time.NewTicker(WaitPoll)
	defer poll.Stop()
	for {
		if ctx.Err() != nil {
			return st, ctx.Err()
		}
		next, err := s.status(ctx, r)
		if err != nil {
			return next, err
		}
		st = next
		if satisfied(cond, st, first) {
			return st, nil
		}
		if wctx.Err() != nil {
			st.TimedOut, st.WaitClamped = true, clamped
			return st, nil
		}
		select {
		case <-poll.C:
		case <-wctx.Done():
		}
	}
}
