package plugin

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/avenor-go/avenor/sdk/plugin/internal/toproto"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// The plugin side of a take-over (Reattach): a host that starts after the
// previous one died hands the plugin a new stream for a session it kept
// (linger.go). The session gets the new stream and a new outbox, which
// sends, in order: Opened{reattached}, everything buffered while no host
// was there, the last turn end again when its turn is over and it was not
// among them, and every permission request still waiting that was not
// among them (the old host may have died before it recorded it). The turn
// in flight goes on untouched.

// orphan marks the session as without a host and returns the channel
// closed when a host takes it over.
func (ss *sessionServer) orphan() <-chan struct{} {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.taken == nil {
		ss.taken = make(chan struct{})
		ss.lostAt = time.Now()
	}
	return ss.taken
}

// reattach serves a stream whose first message is Reattach.
func (s *server) reattach(stream grpc.ServerStream, sessionID string) error {
	// A host that starts at once after the old one died can be here before
	// the session has learnt that its stream broke: it is given the time
	// that takes.
	ss := s.claimOrphan(sessionID)
	for deadline := time.Now().Add(lingerParentWait + time.Second); ss == nil && time.Now().Before(deadline) && s.hasSession(sessionID); {
		time.Sleep(20 * time.Millisecond)
		ss = s.claimOrphan(sessionID)
	}
	if ss == nil {
		o := newOutbox(stream, s.logger)
		defer o.close()
		o.push(toproto.Closed(runtime.Errorf(runtime.FaultUser, "plugin %s keeps no session %q for a new host: it was closed, or its linger window passed", s.info.Name, sessionID)))
		return o.flush()
	}
	if sessionID == "" {
		return status.Error(codes.InvalidArgument, "reattach: no session id")
	}
	ss.takeOver(stream)
	s.mu.Lock()
	if s.lingerTimer != nil && !s.orphansLocked() {
		s.lingerTimer.Stop()
		s.lingerTimer = nil
		s.logger.Info("a new host took the sessions over")
	}
	s.mu.Unlock()
	defer s.forget(ss, stream)
	defer func() {
		ss.outMu.RLock()
		o := ss.out
		ss.outMu.RUnlock()
		ss.mu.Lock()
		mine := ss.stream == stream
		ss.mu.Unlock()
		if mine {
			o.close()
		}
	}()
	return ss.serve(stream)
}

// claimOrphan finds the session id that waits for a host and claims it, so
// that no second stream takes it too.
func (s *server) claimOrphan(id string) *sessionServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ss := range s.sessions {
		if ss.sess == nil || ss.sess.ID() != id {
			continue
		}
		ss.mu.Lock()
		orphan := ss.taken != nil && !ss.claimed
		if orphan {
			ss.claimed = true
		}
		ss.mu.Unlock()
		if orphan {
			return ss
		}
	}
	return nil
}

// hasSession: a live session has id.
func (s *server) hasSession(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ss := range s.sessions {
		if ss.sess != nil && ss.sess.ID() == id {
			return true
		}
	}
	return false
}

// orphansLocked: some session still waits for a host; s.mu is held.
func (s *server) orphansLocked() bool {
	for ss := range s.sessions {
		ss.mu.Lock()
		o := ss.taken != nil
		ss.mu.Unlock()
		if o {
			return true
		}
	}
	return false
}

// takeOver moves the session to stream (see the file comment).
func (ss *sessionServer) takeOver(stream grpc.ServerStream) {
	ss.outMu.Lock()
	defer ss.outMu.Unlock()
	old := ss.out
	old.close() // what it still held is in its linger buffer now
	msgs := old.takeUnsent()
	replay := old.takeSent()
	nu := newOutbox(stream, ss.server.logger)
	if ss.server.linger > 0 {
		nu.keepUnsent()
	}
	ss.mu.Lock()
	turnID, lostAt, lastEnded := ss.turnID, ss.lostAt, ss.lastEnded
	running := ss.turnDone != nil
	if running {
		select {
		case <-ss.turnDone:
			running = false
		default:
		}
	}
	pending := append([]toproto.Message(nil), ss.pendingMsgs...)
	taken := ss.taken
	ss.taken, ss.claimed, ss.stream = nil, false, stream
	ss.mu.Unlock()

	sent := map[toproto.Message]bool{}
	events := 0
	for _, m := range msgs {
		sent[m] = true
		events += m.EventCount()
	}
	nu.push(toproto.Reattached(toproto.Reattach{
		SessionID: ss.sess.ID(), Process: ss.sess.Process(),
		TurnID: turnID, TurnRunning: running, BufferedEvents: events, Gap: time.Since(lostAt),
		ReplayEvents: len(replay),
	}))
	if len(replay) > 0 {
		nu.push(toproto.Events(replay))
	}
	for _, m := range msgs {
		nu.push(m)
	}
	if !running && !lastEnded.IsZero() && !sent[lastEnded] {
		nu.push(lastEnded)
	}
	for _, m := range pending {
		if !sent[m] {
			nu.push(m)
		}
	}
	ss.out = nu
	if taken != nil {
		close(taken) // the old stream's serve returns
	}
	ss.server.logger.Info("a new host took the session over", "session_id", ss.sess.ID(), "buffered_events", events, "turn_running", running)
}
