package event

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// blockingWriter is a log whose writes do not return until release is
// called: a hung NFS mount, a frozen disk, a FIFO nobody reads.
type blockingWriter struct {
	entered chan struct{} // one value per Write that started
	release chan struct{}
	once    sync.Once
}

func newBlockingWriter() *blockingWriter {
	return &blockingWriter{entered: make(chan struct{}, 1<<16), release: make(chan struct{})}
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	b.entered <- struct{}{}
	<-b.release
	return len(p), nil
}

func (b *blockingWriter) unblock() { b.once.Do(func() { close(b.release) }) }

// errWriter fails every write after the first ok ones, as a file past
// RLIMIT_FSIZE or on a full disk does.
type errWriter struct {
	mu    sync.Mutex
	ok    int
	lines int
}

func (e *errWriter) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ok == 0 {
		return 0, syscall.EFBIG
	}
	e.ok--
	e.lines += strings.Count(string(p), "\n")
	return len(p), nil
}

// waitIdle waits until w's log goroutine has returned (goleak).
func waitIdle(t *testing.T, w *Writer) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !w.batch.idle() {
		if time.Now().After(deadline) {
			t.Fatal("the log goroutine did not end after the log was released")
		}
		time.Sleep(time.Millisecond)
	}
}

// within fails the test when f does not return within d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v while the log was blocked", what, d)
	}
}

// A log whose write blocks holds up neither the control side of the
// writer (LatestSeq, History, Subscribe, SetSessionID) nor, past the stall
// bound, the Writes themselves: the log fails with ErrStalled, Failed is
// closed, Flush and Close return, and the events still reach history and
// subscribers. Both modes; the blocked goroutine is abandoned until the
// write returns. (It used to write under the writer's lock: a FIFO without
// a reader wedged status, list and shutdown for ever.)
func TestWriterStalledLogFails(t *testing.T) {
	for _, batched := range []bool{false, true} {
		name := map[bool]string{false: "direct", true: "batched"}[batched]
		t.Run(name, func(t *testing.T) {
			out := newBlockingWriter()
			defer out.unblock()
			const stall = 200 * time.Millisecond
			w := NewWriter(out, testStamp(), Options{Batched: batched, MaxWriteStall: stall})
			sub := w.Subscribe(1 << 12)
			defer sub.Close()

			// A producer floods; more than the queue holds, so a batched
			// writer must wait for room too.
			big := strings.Repeat("z", 4<<10)
			const n = 2 * MaxQueuedLogBytes / (4 << 10)
			produced := make(chan error, 1)
			start := time.Now()
			go func() {
				var first error
				for i := range n {
					if _, err := w.Write(Event{"event": "x", "i": i, "big": big}); err != nil && first == nil {
						first = err
					}
				}
				produced <- first
			}()
			<-out.entered // the first write hangs

			within(t, stall/2, "LatestSeq", func() { w.LatestSeq() })
			within(t, stall/2, "History", func() { w.History(0, 1) })
			within(t, stall/2, "SetSessionID", func() { w.SetSessionID("ses_1") })
			within(t, stall/2, "Subscribe", func() { w.Subscribe(1).Close() })

			var err error
			select {
			case err = <-produced:
			case <-time.After(20 * stall):
				t.Fatalf("the producer was still blocked %v after the log hung (stall bound %v)", 20*stall, stall)
			}
			if !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), "event log") {
				t.Fatalf("Write error = %v, want ErrStalled naming the event log", err)
			}
			if d := time.Since(start); d < stall {
				t.Fatalf("the log was given up after %v, before the stall bound %v", d, stall)
			}
			select {
			case <-w.Failed():
			default:
				t.Fatal("Failed() not closed after a stall")
			}
			within(t, stall, "Flush", func() {
				if err := w.Flush(); !errors.Is(err, ErrStalled) {
					t.Errorf("Flush = %v, want ErrStalled", err)
				}
			})
			if !errors.Is(w.Err(), ErrStalled) {
				t.Fatalf("Err = %v, want ErrStalled", w.Err())
			}
			// The stream goes on without the log.
			if got := w.LatestSeq(); got != n {
				t.Fatalf("LatestSeq = %d, want %d: events were lost from the stream", got, n)
			}
			for want := int64(1); want <= 3; want++ {
				if got := receive(t, sub)["seq"]; got != want {
					t.Fatalf("subscriber got seq %v, want %d", got, want)
				}
			}
			within(t, stall, "Close", func() { _ = w.Close() })

			out.unblock()
			waitIdle(t, w)
		})
	}
}

// A log whose writes fail fails the writer once and for good: the Write
// that learns of it returns the error (once, so a flood does not repeat
// it), Err, Flush and Close keep it, Failed is closed, and nothing more is
// written after the first missing line, while history and subscribers go
// on.
func TestWriterFailingLog(t *testing.T) {
	for _, batched := range []bool{false, true} {
		name := map[bool]string{false: "direct", true: "batched"}[batched]
		t.Run(name, func(t *testing.T) {
			out := &errWriter{ok: 1}
			w := NewWriter(out, testStamp(), Options{Batched: batched})
			sub := w.Subscribe(64)
			defer sub.Close()
			var errs []error
			for i := range 10 {
				if _, err := w.Write(Event{"event": "x", "i": i}); err != nil {
					errs = append(errs, err)
				}
				if i <= 1 {
					// The first line alone takes the one good write; the
					// second fails, and a batched Write learns it later.
					_ = w.Flush()
				}
			}
			flushErr := w.Flush()
			if len(errs) != 1 || !errors.Is(errs[0], syscall.EFBIG) || !strings.Contains(errs[0].Error(), "event log") {
				t.Fatalf("Write errors = %v, want one, the EFBIG of the event log", errs)
			}
			if !errors.Is(flushErr, syscall.EFBIG) || !errors.Is(w.Err(), syscall.EFBIG) || !errors.Is(w.Close(), syscall.EFBIG) {
				t.Fatalf("Flush, Err, Close = %v, %v, %v; want the EFBIG each", flushErr, w.Err(), w.Close())
			}
			select {
			case <-w.Failed():
			default:
				t.Fatal("Failed() not closed after a write error")
			}
			out.mu.Lock()
			lines := out.lines
			out.mu.Unlock()
			if lines != 1 {
				t.Fatalf("the log got %d lines, want only the one before the failure", lines)
			}
			if got := len(w.History(0, 0)); got != 10 {
				t.Fatalf("history holds %d events, want all 10", got)
			}
			for want := int64(1); want <= 10; want++ {
				if got := receive(t, sub)["seq"]; got != want {
					t.Fatalf("subscriber got seq %v, want %d", got, want)
				}
			}
		})
	}
}

// AfterFailed calls back once the log fails, without a goroutine waiting
// until then; one stopped before the failure never runs; a writer without
// a log never calls back.
func TestWriterAfterFailed(t *testing.T) {
	out := &errWriter{ok: 1}
	w := NewWriter(out, testStamp(), Options{})
	called := make(chan struct{})
	stopped := 0
	w.AfterFailed(func() { close(called) })
	stop := w.AfterFailed(func() { stopped++ })
	if !stop() {
		t.Fatal("stop before the failure reported that the callback will run")
	}
	before := runtime.NumGoroutine()
	for i := range 3 {
		_, _ = w.Write(Event{"event": "x", "i": i})
	}
	select {
	case <-called:
	case <-time.After(5 * time.Second):
		t.Fatal("AfterFailed's callback did not run after a write error")
	}
	if stopped != 0 {
		t.Fatal("a stopped callback ran")
	}
	_ = w.Close()
	if n := runtime.NumGoroutine(); n > before+1 {
		t.Errorf("goroutines %d → %d", before, n)
	}

	quiet := NewWriter(nil, testStamp(), Options{})
	if stop := quiet.AfterFailed(func() { t.Error("a writer without a log called back") }); !stop() {
		t.Error("stop on a writer without a log reported that the callback will run")
	}
	_ = quiet.Close()
}
