package event

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// memWriters is how many writers the memory tests build: enough that a
// per-writer figure is not lost in the heap's noise.
const memWriters = 200

// chunkFields is an echo-like agent.message_chunk as a plugin sends it.
var chunkFields = []byte(`{"content":{"text":"word ","type":"text"},"messageId":"msg_0123456789","session_update":"agent_message_chunk"}`)

// streamOne writes what an echo runtime writes for one turn: a
// session.start, n chunks and a session.end, the chunks as plugin lines
// (WriteFields), as host/runner does.
func streamOne(tb testing.TB, w *Writer, n int) {
	tb.Helper()
	w.SetSessionID("ses_01JX8Q4V7K3M9N2P5R6T8W0Y1Z")
	if _, err := w.Write(Event{"event": "session.start", "backend": "echo", "dir": "/tmp/work", "plugin": "echo", "plugin_version": "1.0.0", "protocol_version": 1}); err != nil {
		tb.Fatal(err)
	}
	for range n {
		f, ok := ScanFields(TypeMessageChunk, chunkFields)
		if !ok {
			tb.Fatal("chunk fields not canonical")
		}
		_, err := w.WriteFields(f, "")
		f.Release()
		if err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := w.Write(Event{"event": "session.end", "stop_reason": "end_turn", "final_output": strings.Repeat("word ", n)}); err != nil {
		tb.Fatal(err)
	}
}

func memStamp(i int) Stamp {
	return Stamp{RunID: fmt.Sprintf("a1b2c3d4e5f6%04x", i), RunLabel: fmt.Sprintf("b%d", i), RuntimeID: fmt.Sprintf("rt_%d", i)}
}

// heapPer returns the live heap bytes per call that build leaves behind,
// called memWriters times, and what the calls returned.
func heapPer[T any](t *testing.T, build func(i int) T) (float64, []T) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	kept := make([]T, memWriters)
	for i := range kept {
		kept[i] = build(i)
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / memWriters, kept
}

// A runtime that streamed a turn and went idle (a parked stable runtime)
// holds its 256-event history and nothing sized for traffic it no longer
// has: no batch buffers, no full-size subscriber queue, no encode scratch
// beyond an ordinary line. The budget (docs/configuration.md,
// event.IdleWriterBytes) is per writer with one drained subscriber, after
// 300 ordinary chunks (~285-byte lines). Writers kept flood-sized batch
// buffers, 16 KiB arenas and full-size queues: 204 KB each, measured
// 2026-12-03.
func TestIdleWriterMemory(t *testing.T) {
	type idle struct {
		w   *Writer
		sub *Subscription
	}
	var items []Item
	per, writers := heapPer(t, func(i int) idle {
		w := NewWriter(io.Discard, memStamp(i), Options{Batched: true})
		sub := w.Subscribe(0)
		streamOne(t, w, 300)
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		var more bool
		items, more = sub.ReceiveItems(items[:0])
		if !more || len(items) != DefaultQueue+1 {
			t.Fatalf("subscriber received %d items, want %d (a lag notice and a full queue)", len(items), DefaultQueue+1)
		}
		clear(items)
		w.BoundFinalOutput(0)
		return idle{w, sub}
	})
	t.Logf("an idle writer with one drained subscriber: %.0f bytes", per)
	if per > IdleWriterBytes {
		t.Errorf("an idle writer with one drained subscriber holds %.0f bytes, over the %d-byte budget", per, IdleWriterBytes)
	}
	// The window holds at ordinary sizes: the latest 256 events.
	if h := writers[0].w.History(0, 0); len(h) != DefaultHistory || h[len(h)-1][KeySeq] != int64(302) {
		t.Errorf("history holds %d events, the last %v; want %d ending at seq 302", len(h), h[len(h)-1][KeySeq], DefaultHistory)
	}
	for _, it := range writers {
		it.sub.Close()
		if err := it.w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A subscription holds only a small constant until traffic comes, and
// gives its queue back once drained: with 50 subscribers to every one of
// 200 runtimes, queues preallocated to 256 events held 10 000 × 12 KiB.
func TestIdleSubscriptionMemory(t *testing.T) {
	w := NewWriter(nil, memStamp(0), Options{})
	defer w.Close()
	per, subs := heapPer(t, func(int) *Subscription { return w.Subscribe(0) })
	t.Logf("a new subscription: %.0f bytes", per)
	if per > IdleSubscriptionBytes {
		t.Errorf("a new subscription holds %.0f bytes, over the %d-byte budget", per, IdleSubscriptionBytes)
	}
	streamOne(t, w, 300)
	var items []Item
	for _, sub := range subs {
		var more bool
		items, more = sub.ReceiveItems(items[:0])
		if !more || len(items) != DefaultQueue+1 {
			t.Fatalf("a subscriber received %d items, want %d (a lag notice and a full queue)", len(items), DefaultQueue+1)
		}
		clear(items)
		sub.mu.Lock()
		held := cap(sub.queue)
		sub.mu.Unlock()
		if held > queueKeep {
			t.Fatalf("a drained subscription keeps a queue of %d entries, want at most %d", held, queueKeep)
		}
	}
	for _, sub := range subs {
		sub.Close()
	}
}

// heldLogsBytes bounds the heap of memWriters writers streaming ordinary
// chunks while their logs do not take a line (a supervisor starved of CPU
// whose log goroutines do not run, a stalled disk): each one's
// history, the lines queued for all the logs (MaxQueuedLogBytesTotal)
// and each writer's floor (MinQueuedLogBytes), its batch being written
// and the pending one. 200 writers held 58 MB with a 16 MiB total and a
// 64 KiB floor (measured 2026-12-03), 27 MB with 8 MiB and 16 KiB.
const heldLogsBytes = 40 << 20

// TestHeldLogsMemory: writers whose logs are held keep within
// heldLogsBytes together, and every one still queues its floor.
func TestHeldLogsMemory(t *testing.T) {
	hold := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		close(hold)
		wg.Wait()
	}()
	per, writers := heapPer(t, func(i int) *Writer {
		w := NewWriter(&slowLineWriter{hold: hold}, memStamp(i), Options{Batched: true, MaxWriteStall: time.Minute})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Close()
			streamOne(t, w, 1000)
		}()
		if i == memWriters-1 {
			waitQueuedStill(t)
		}
		return w
	})
	total := per * memWriters
	t.Logf("%d writers with held logs: %.1f MB of heap, %.1f MB queued", memWriters, total/1e6, float64(queuedLogBytes.Load())/1e6)
	if total > heldLogsBytes {
		t.Errorf("%d writers with held logs hold %.1f MB of heap, want ≤ %.1f MB", memWriters, total/1e6, float64(heldLogsBytes)/1e6)
	}
	for i, w := range writers {
		w.batch.mu.Lock()
		n := w.batch.queued
		w.batch.mu.Unlock()
		if n < MinQueuedLogBytes {
			t.Errorf("writer %d queued %d bytes, under its floor %d", i, n, MinQueuedLogBytes)
		}
	}
}

// waitQueuedStill returns once the bytes queued for the logs stop
// changing: every writer waits for room.
func waitQueuedStill(t *testing.T) {
	t.Helper()
	last := int64(-1)
	for deadline := time.Now().Add(20 * time.Second); ; {
		time.Sleep(200 * time.Millisecond)
		now := queuedLogBytes.Load()
		if now == last {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queued bytes still change after 20s: %d", now)
		}
		last = now
	}
}
