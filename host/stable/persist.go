package stable

import (
	"fmt"
	"time"
)

// Persisting the supervisor's state (state.go) as it changes. Changes only
// mark the state dirty; one saver goroutine writes the newest snapshot, so
// no event path waits for an fsync and no lock is held across a write.

// startSaver starts the goroutine that writes state.json whenever the
// state is dirty; stopSaver stops it after a last write.
func (s *Supervisor) startSaver() {
	if s.store == nil {
		return
	}
	s.saveCh = make(chan struct{}, 1)
	s.saverQuit = make(chan struct{})
	s.saverDone = make(chan struct{})
	go func() {
		defer close(s.saverDone)
		for {
			select {
			case <-s.saveCh:
				// The waiters taken before the snapshot registered after
				// their change: this write holds it (group commit).
				s.saveWaitMu.Lock()
				waiting := s.saveWaiters
				s.saveWaiters = nil
				s.saveWaitMu.Unlock()
				err := s.saveNow()
				for _, w := range waiting {
					w <- err // buffered: the waiter may have given up
				}
			case <-s.saverQuit:
				return
			}
		}
	}()
}

// stopSaver stops the saver; with remove the state file goes too (every
// runtime was stopped by this supervisor: nothing is left to recover).
func (s *Supervisor) stopSaver(remove bool) {
	if s.store == nil || s.saverQuit == nil {
		return
	}
	close(s.saverQuit)
	<-s.saverDone
	if remove {
		if err := s.store.remove(); err != nil {
			s.log.Warn("removing the supervisor state file", "error", err)
		}
	}
}

// dirty asks the saver for a write of the current state.
func (s *Supervisor) dirty() {
	if s.saveCh == nil {
		return
	}
	select {
	case s.saveCh <- struct{}{}:
	default: // a write is already due; it will take the newest snapshot
	}
}

// StateSyncWait bounds how long a prompt waits for state.json to be
// written: a state directory on a disk that stops answering must not hold
// every prompt.
const StateSyncWait = 5 * time.Second

// saveSync returns once a write of the state taken after the call has
// ended (atomic, fsynced), for a change a caller must not act on before it
// is durable, with that write's error: a caller refuses what it cannot
// make durable (a full disk). Callers at the same moment share one write.
// Without a state directory, or once the saver has stopped, it returns nil
// at once; after StateSyncWait it returns nil with a warning (the write
// goes on: a slow disk must not hold every prompt, and one that fails
// says so to the next caller).
func (s *Supervisor) saveSync() error {
	if s.saveCh == nil {
		return nil
	}
	done := make(chan error, 1)
	s.saveWaitMu.Lock()
	s.saveWaiters = append(s.saveWaiters, done)
	s.saveWaitMu.Unlock()
	s.dirty()
	t := time.NewTimer(StateSyncWait)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-s.saverDone:
	case <-t.C:
		s.log.Warn("the supervisor state file was not written in time; going on without waiting", "path", s.store.path(), "waited", StateSyncWait)
	}
	return nil
}

// saveNow writes the state file; an error is logged, and returned as one
// a caller can show (ErrNotDurable).
func (s *Supervisor) saveNow() error {
	err := s.store.save(s.snapshot)
	if err == nil {
		return nil
	}
	s.log.Warn("writing the supervisor state file", "path", s.store.path(), "error", err)
	return fmt.Errorf("%w: writing %s: %v; free space there (or fix the directory) and try again", ErrNotDurable, s.store.path(), err)
}

// snapshot is the supervisor's durable state now.
func (s *Supervisor) snapshot() supervisorState {
	list, _ := s.sorted()
	s.mu.Lock()
	st := supervisorState{Socket: s.cfg.SocketPath, PID: s.pid, RunID: s.cfg.RunID, NextN: s.nextN}
	s.mu.Unlock()
	for _, rt := range list {
		r := rt.run.Record()
		r.N, r.Started = rt.n, rt.started
		r.Spawn = rt.spawnJSON
		st.Runtimes = append(st.Runtimes, r)
	}
	return st
}
