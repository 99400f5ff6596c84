package event

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// slowLineWriter records every Write call, checks that each one holds
// whole lines only, and can be held to let a backlog build.
type slowLineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	calls int
	bad   []string
	hold  chan struct{} // when non-nil, each Write waits for a receive
	fail  atomic.Bool
}

func (l *slowLineWriter) Write(p []byte) (int, error) {
	if l.hold != nil {
		<-l.hold
	}
	if l.fail.Load() {
		return 0, errors.New("disk full")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if len(p) == 0 || p[len(p)-1] != '\n' {
		l.bad = append(l.bad, string(p))
	}
	return l.buf.Write(p)
}

func (l *slowLineWriter) snapshot() (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String(), l.calls
}

// The batched writer writes the same bytes as the direct one, in the same
// order, whole lines per write, with fewer writes under a burst.
func TestBatchedSameBytes(t *testing.T) {
	var direct bytes.Buffer
	dw := NewWriter(&direct, testStamp(), Options{})
	out := &slowLineWriter{}
	bw := NewWriter(out, testStamp(), Options{Batched: true})
	const n = 5000
	for i := range n {
		ev := Event{"event": "agent.message_chunk", "i": i, "content": map[string]any{"text": strings.Repeat("<x>", i%7)}}
		if _, err := dw.Write(ev); err != nil {
			t.Fatal(err)
		}
		if _, err := bw.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	got, calls := out.snapshot()
	if got != direct.String() {
		t.Fatalf("batched log differs from the direct one (%d vs %d bytes)", len(got), direct.Len())
	}
	if len(out.bad) > 0 {
		t.Fatalf("%d writes were not whole lines, e.g. %q", len(out.bad), out.bad[0])
	}
	if calls > n {
		t.Fatalf("%d writes for %d lines", calls, n)
	}
	t.Logf("%d lines in %d writes", n, calls)
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
}

// A lone line is written without waiting for company: no timer.
func TestBatchedLoneLineWrittenAtOnce(t *testing.T) {
	out := &slowLineWriter{}
	w := NewWriter(out, testStamp(), Options{Batched: true})
	defer w.Close()
	if _, err := w.Write(Event{"event": "x"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if got, _ := out.snapshot(); got != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a lone line was not written within 5s without a Flush")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// Flush returns only once the lines are in the log; Close flushes; a held
// log makes Writes wait once MaxQueuedLogBytes are queued, and the
// subscribers still see every event in order.
func TestBatchedFlushAndBackpressure(t *testing.T) {
	out := &slowLineWriter{hold: make(chan struct{})}
	w := NewWriter(out, Stamp{}, Options{Batched: true})
	sub := w.Subscribe(1 << 16)
	defer sub.Close()

	big := strings.Repeat("y", 1<<10)
	const n = 3 * MaxQueuedLogBytes / (1 << 10) // enough to fill pending more than twice
	var written atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			if _, err := w.Write(Event{"event": "x", "i": i, "big": big}); err != nil {
				t.Error(err)
				return
			}
			written.Add(1)
		}
	}()
	// The first write is held, so the producer must stop at ~2 batches.
	time.Sleep(50 * time.Millisecond)
	if got := written.Load(); got >= n {
		t.Fatalf("all %d writes returned while the log was held: no backpressure", got)
	}
	go func() { // release the log
		for {
			select {
			case out.hold <- struct{}{}:
			case <-done:
				close(out.hold)
				return
			}
		}
	}()
	<-done
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got, _ := out.snapshot()
	sc := bufio.NewScanner(strings.NewReader(got))
	sc.Buffer(nil, 1<<20)
	var lines int
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d: %v", lines+1, err)
		}
		lines++
		if m["seq"] != float64(lines) {
			t.Fatalf("line %d has seq %v", lines, m["seq"])
		}
	}
	if lines != n {
		t.Fatalf("%d lines in the log after Flush, want %d", lines, n)
	}
	for want := int64(1); want <= n; want++ {
		if got := receive(t, sub)["seq"]; got != want {
			t.Fatalf("subscriber got seq %v, want %d", got, want)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// A failed log write does not stop the stream; it surfaces once from a
// Write, and from Flush, Close and Err, naming the cause; the log takes no
// line after it.
func TestBatchedWriteError(t *testing.T) {
	out := &slowLineWriter{}
	out.fail.Store(true)
	w := NewWriter(out, Stamp{}, Options{Batched: true})
	sub := w.Subscribe(8)
	defer sub.Close()
	var told []error
	if _, err := w.Write(Event{"event": "a"}); err != nil {
		told = append(told, err) // the goroutine may fail before a's Write returns
	}
	err := w.Flush()
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "event log") {
		t.Fatalf("Flush after a failed write = %v, want the cause", err)
	}
	out.fail.Store(false)
	for _, typ := range []string{"b", "c"} {
		if _, err := w.Write(Event{"event": typ}); err != nil {
			told = append(told, err)
		}
	}
	if len(told) != 1 || !strings.Contains(told[0].Error(), "disk full") {
		t.Fatalf("Writes reported %v, want the failure exactly once", told)
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Close = %v, want the first log error", err)
	}
	if w.Err() == nil {
		t.Fatal("Err() = nil after a failed write")
	}
	for _, want := range []sdk.EventType{"a", "b", "c"} {
		if got := receive(t, sub).Type(); got != want {
			t.Fatalf("subscriber got %q, want %q", got, want)
		}
	}
	if got, _ := out.snapshot(); got != "" {
		t.Fatalf("log = %q, want nothing after the failure", got)
	}
}

// Many writers at once through a batched writer: every line once, in seq
// order, whole lines per write.
func TestBatchedConcurrent(t *testing.T) {
	const goroutines, perG = 8, 500
	out := &slowLineWriter{}
	w := NewWriter(out, testStamp(), Options{Batched: true})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				if _, err := w.Write(Event{"event": "x", "g": g, "i": i}); err != nil {
					t.Error(err)
					return
				}
				if i%100 == 0 {
					if err := w.Flush(); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := out.snapshot()
	if len(out.bad) > 0 {
		t.Fatalf("%d writes were not whole lines", len(out.bad))
	}
	var seq float64
	for line := range strings.Lines(got) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		seq++
		if m["seq"] != seq {
			t.Fatalf("line %v has seq %v", seq, m["seq"])
		}
	}
	if seq != goroutines*perG {
		t.Fatalf("%v lines, want %d", seq, goroutines*perG)
	}
}

func BenchmarkWriteBatched(b *testing.B) {
	w := NewWriter(discardLines{}, Stamp{RunID: "a1b2c3d4e5f60718", RunLabel: "bench"}, Options{Batched: true})
	ev := benchEvent()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Write(ev); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	reportRate(b)
}

type discardLines struct{}

func (discardLines) Write(p []byte) (int, error) { return len(p), nil }

// With many logs held at once (a supervisor that falls behind), the lines
// queued by all the writers together stop near MaxQueuedLogBytesTotal,
// while each writer could still queue its MinQueuedLogBytes; released,
// every line reaches its log and nothing stays counted.
func TestQueuedLogBytesTotal(t *testing.T) {
	const writers = 40 // × MaxQueuedLogBytes each would be 40 MiB
	line := strings.Repeat("y", 4<<10)
	const perWriter = MaxQueuedLogBytes/(4<<10) + 16
	hold := make(chan struct{})
	var outs []*slowLineWriter
	var ws []*Writer
	var wg sync.WaitGroup
	written := make([]atomic.Int64, writers)
	for i := range writers {
		out := &slowLineWriter{hold: hold}
		w := NewWriter(out, Stamp{}, Options{Batched: true, MaxWriteStall: time.Minute})
		outs, ws = append(outs, out), append(ws, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perWriter {
				if _, err := w.Write(Event{"event": "x", "big": line}); err != nil {
					t.Error(err)
					return
				}
				written[i].Add(1)
			}
		}()
	}
	// Wait until the queues stop growing: every writer waits for room.
	last := int64(-1)
	for deadline := time.Now().Add(10 * time.Second); ; {
		time.Sleep(100 * time.Millisecond)
		now := queuedLogBytes.Load()
		if now == last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queued bytes still change after 10s: %d", now)
		}
		last = now
	}
	lineBytes := int64(len(line) + 40)
	if limit := int64(MaxQueuedLogBytesTotal) + writers*(MinQueuedLogBytes+3*lineBytes); last > limit {
		t.Errorf("%d writers with held logs queued %d bytes together, over %d", writers, last, limit)
	}
	for i := range writers {
		if got := written[i].Load() * lineBytes; got < MinQueuedLogBytes {
			t.Errorf("writer %d queued %d bytes, under its floor %d", i, got, MinQueuedLogBytes)
		}
	}
	close(hold)
	wg.Wait()
	for i, w := range ws {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if _, calls := outs[i].snapshot(); calls == 0 {
			t.Fatalf("writer %d wrote nothing", i)
		}
		if got, _ := outs[i].snapshot(); strings.Count(got, "\n") != perWriter {
			t.Fatalf("writer %d's log has %d lines, want %d", i, strings.Count(got, "\n"), perWriter)
		}
	}
	if n := queuedLogBytes.Load(); n != 0 {
		t.Errorf("%d bytes still counted as queued after every log was flushed", n)
	}
}
