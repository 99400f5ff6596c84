package run

import (
	"fmt"
	"os"
	"sync"

	"github.com/avenor-go/avenor/internal/regularfile"
)

// eventLog is a runtime's NDJSON event log, as the io.Writer of its
// event.Writer. While the runtime is parked the file is closed: a write then
// opens it, appends and closes it again. Parked runtimes used to hold their
// log open, so the supervisor's fds grew with every runtime it had seen, not
// with the ones running (300 parked runtimes: 341 fds; under `ulimit -n 256`
// spawns failed from the 213th). Reopening in append mode changes no byte of
// what was written: the log is exactly the lines written, in order.
type eventLog struct {
	path string

	// keep holds the file open even while parked: it is not a regular
	// file (a FIFO's reader would see EOF at every close).
	keep bool

	mu     sync.Mutex
	f      *os.File // nil while parked (or closed)
	parked bool
	closed bool
}

// createEventLog creates (truncates) the log at path, open for the first run.
func createEventLog(path string) (*eventLog, error) {
	// The harness names the path: a pipe or device is refused, and in a
	// directory other users may write, so are a planted symlink and another
	// user's file (regularfile.CreateLog).
	f, err := regularfile.CreateLog(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	keep := err != nil || !st.Mode().IsRegular()
	return &eventLog{path: path, f: f, keep: keep}, nil
}

// Write appends p; a parked log is opened for this write only.
func (l *eventLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, fmt.Errorf("event log %s: %w", l.path, os.ErrClosed)
	}
	if l.f == nil {
		if err := l.openLocked(); err != nil {
			return 0, err
		}
	}
	n, err := l.f.Write(p)
	if l.parked {
		if cerr := l.closeLocked(); err == nil {
			err = cerr
		}
	}
	return n, err
}

// openLocked reopens the log to append to it. Without O_CREATE: a log
// removed while its runtime was parked is an error the writer reports, not
// a new file starting halfway through the stream.
func (l *eventLog) openLocked() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("reopening the event log of a parked runtime: %w", err)
	}
	l.f = f
	return nil
}

func (l *eventLog) closeLocked() error {
	f := l.f
	l.f = nil
	if f == nil {
		return nil
	}
	return f.Close()
}

// park closes the file until the next write; the runtime's run ended.
func (l *eventLog) park() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keep || l.closed {
		return nil
	}
	l.parked = true
	return l.closeLocked()
}

// unpark keeps the file open across writes again: a run starts. It is
// opened at the first write.
func (l *eventLog) unpark() {
	l.mu.Lock()
	l.parked = false
	l.mu.Unlock()
}

// Close closes the log for good.
func (l *eventLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return l.closeLocked()
}
