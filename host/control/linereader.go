package control

import (
	"bufio"
	"errors"
	"io"
	"runtime/debug"
	"sync"
	"time"
)

// keepLineBuffer is the largest line buffer a connection keeps between
// lines; a larger one, grown for one long request, goes when that request
// has been handled. It is not counted against the shared budget.
const keepLineBuffer = 64 << 10

// readerBuffer is each connection's bufio.Reader size.
const readerBuffer = 64 << 10

// lineBudget bounds the bytes all connections of a server hold in line
// buffers above keepLineBuffer (MaxPendingRequestBytes): without it, 126
// connections each sending 4 MiB without a newline held 838 MB.
type lineBudget struct {
	mu   sync.Mutex
	used int
	max  int
}

// take reserves n bytes; false when that would pass the bound.
func (b *lineBudget) take(n int) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

func (b *lineBudget) give(n int) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// inUse is the bytes reserved now.
func (b *lineBudget) inUse() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// lineReader reads the request lines of one connection, holding at most
// max bytes of one line and, above keepLineBuffer, only what the shared
// budget grants. It is used by one goroutine.
type lineReader struct {
	r      *bufio.Reader
	max    int
	budget *lineBudget
	// buf is the line buffer kept between lines (at most keepLineBuffer).
	buf []byte
	// held is what this reader has taken from the budget: the capacity
	// above keepLineBuffer of the buffer of the line being read or last
	// returned.
	held int
	// released is called with the bytes given back when a buffer that
	// held budget is dropped, so the process can return them to the
	// system; nil: nothing is called.
	released func(n int)
}

func newLineReader(r io.Reader, max int, budget *lineBudget, released func(int)) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, readerBuffer), max: max, budget: budget, released: released}
}

// read returns the next line, newline excluded: errLineTooLong for a line
// of more than max bytes, errBudget when the budget cannot hold it. After
// either, the connection cannot be read on (the rest of the line is
// unread) and must be closed. The slice is valid until the next call.
func (lr *lineReader) read() ([]byte, error) {
	lr.drop() // the previous line has been handled
	b := lr.buf[:0]
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if len(chunk) > 0 {
			n := len(b) + len(chunk)
			if n > lr.max+1 || (n == lr.max+1 && chunk[len(chunk)-1] != '\n') {
				lr.drop()
				return nil, errLineTooLong
			}
			if n > cap(b) {
				var ok bool
				if b, ok = lr.grow(b, n); !ok {
					lr.drop()
					return nil, errBudget
				}
			}
			b = append(b, chunk...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil:
			if cap(b) <= keepLineBuffer {
				lr.buf = b
			}
			return b[:len(b)-1], nil
		case errors.Is(err, io.EOF) && len(b) > 0:
			return b, nil // a last line without its newline
		default:
			if cap(b) <= keepLineBuffer {
				lr.buf = b
			}
			return nil, err
		}
	}
}

// grow returns b with room for n bytes: doubling, but never past max+1
// (the newline), and what passes keepLineBuffer is taken from the budget
// first.
func (lr *lineReader) grow(b []byte, n int) ([]byte, bool) {
	c := min(max(2*cap(b), n, 4096), lr.max+1)
	if over := max(c-keepLineBuffer, 0); over > lr.held {
		if !lr.budget.take(over - lr.held) {
			return b, false
		}
		lr.held = over
	}
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb, true
}

// drop gives back a buffer that held budget, and what it took.
func (lr *lineReader) drop() {
	if lr.held == 0 {
		return
	}
	n := lr.held
	lr.held = 0
	lr.budget.give(n)
	if lr.released != nil {
		lr.released(n)
	}
}

// close gives everything back: the connection is gone.
func (lr *lineReader) close() {
	lr.drop()
	lr.buf = nil
	lr.r = nil
}

// memoryReturner hands memory freed by long request lines back to the
// system: the Go runtime keeps a freed heap for reuse, so a supervisor that
// once held a flood of long lines would otherwise keep its size long after
// the connections closed (the figure: still 838 MB 60 s later). Once at
// least ReturnMemoryAfter bytes were released it frees the OS memory,
// at most once per ReturnMemoryInterval, on a goroutine the server owns.
type memoryReturner struct {
	mu      sync.Mutex
	pending int
	kick    chan struct{}
}

func newMemoryReturner() *memoryReturner {
	return &memoryReturner{kick: make(chan struct{}, 1)}
}

// released notes n bytes let go of.
func (m *memoryReturner) released(n int) {
	m.mu.Lock()
	m.pending += n
	due := m.pending >= ReturnMemoryAfter
	m.mu.Unlock()
	if due {
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
}

// run frees OS memory when kicked, until done.
func (m *memoryReturner) run(done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-m.kick:
		}
		m.mu.Lock()
		m.pending = 0
		m.mu.Unlock()
		debug.FreeOSMemory()
		t := time.NewTimer(ReturnMemoryInterval)
		select {
		case <-done:
			t.Stop()
			return
		case <-t.C:
		}
	}
}
