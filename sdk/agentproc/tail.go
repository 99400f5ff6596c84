package agentproc

import "sync"

// tailBuffer keeps the last max bytes written to it. It holds up to 2*max
// bytes and compacts only when full, so each byte is copied a bounded number
// of times however much a CLI writes to stderr.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

// Write never fails: it is the sink of an io.TeeReader, and a failing sink
// would stop stderr from being read.
func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(b)
	if n >= t.max {
		t.buf = append(t.buf[:0], b[n-t.max:]...)
		return n, nil
	}
	if len(t.buf)+n > 2*t.max {
		keep := t.buf[len(t.buf)-(t.max-n):]
		t.buf = append(t.buf[:0], keep...)
	}
	t.buf = append(t.buf, b...)
	return n, nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.buf) > t.max {
		return string(t.buf[len(t.buf)-t.max:])
	}
	return string(t.buf)
}
