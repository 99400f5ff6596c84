package mcpserver

import (
	"context"
	"time"
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
// (timed_out). A live run's events wake it through the supervisor's shared
// subscription (watch.go: no wait holds a connection of its own); the
// status, read on the persistent connection at most every WaitSettle, is
// the judge, and is read every WaitPoll when no event comes. A run whose
// supervisor is gone, or goes away during the wait, has its status (the
// sentinel's) read every WaitPoll.
func (s *Server) wait(ctx context.Context, r *resolved, cond string, seconds int) (runStatus, error) {
	d, clamped := s.budget(seconds)
	var wake chan struct{}
	if r.live() {
		var remove func()
		wake, remove = s.watcher(r.conn.socket).add(ctx, r.rec.RuntimeID)
		defer remove()
	}
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
	poll := time.NewTicker(WaitPoll)
	defer poll.Stop()
	for {
		select {
		case <-wake: // nil when the run is not live: never
			// Let a burst of events pass before reading the status.
			select {
			case <-time.After(WaitSettle):
			case <-wctx.Done():
			}
		case <-poll.C:
			if wake != nil {
				s.watcher(r.conn.socket).ensure(ctx) // dial again after a lost subscription
			}
		case <-wctx.Done():
		}
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
	}
}
