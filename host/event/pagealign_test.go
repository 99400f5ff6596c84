package event

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeLog records every Write the batcher makes; the first one is slow,
// so that a flood queues up behind it.
type writeLog struct {
	mu     sync.Mutex
	writes [][]byte
}

func (l *writeLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	first := len(l.writes) == 0
	l.writes = append(l.writes, append([]byte(nil), p...))
	l.mu.Unlock()
	if first {
		time.Sleep(50 * time.Millisecond)
	}
	return len(p), nil
}

// Under a flood a batch goes to the log in writes that stay inside one
// page of the file, or hold one line that straddles a page boundary: a
// SIGKILL, which cuts a write only between pages, then tears no line
// (one writer for every kind of run).
func TestBatchedWritesStayInsideAPage(t *testing.T) {
	log := &writeLog{}
	w := NewWriter(log, Stamp{RunID: "r"}, Options{Batched: true})
	for i := 0; i < 3000; i++ {
		if _, err := w.Write(Event{"event": "agent.message_chunk", "text": strings.Repeat("x", i%700)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	var offset int64
	batched := 0
	for i, p := range log.writes {
		lines := bytes.Count(p, []byte{'\n'})
		if len(p) == 0 || p[len(p)-1] != '\n' {
			t.Fatalf("write %d does not end a line: %q", i, p[max(0, len(p)-40):])
		}
		crosses := offset/logPage != (offset+int64(len(p))-1)/logPage
		if crosses && lines > 1 {
			t.Fatalf("write %d at offset %d: %d bytes, %d lines across a page boundary", i, offset, len(p), lines)
		}
		if lines > 1 {
			batched++
		}
		offset += int64(len(p))
		all.Write(p)
	}
	if got := bytes.Count(all.Bytes(), []byte{'\n'}); got != 3000 {
		t.Fatalf("the log has %d lines, want 3000", got)
	}
	if batched == 0 {
		t.Fatalf("no write carried more than one line in %d writes: the flood was not batched", len(log.writes))
	}
}
