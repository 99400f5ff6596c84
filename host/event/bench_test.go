package event

import (
	"io"
	"testing"
)

func benchEvent() Event {
	return Event{
		"event":          "agent.message_chunk",
		"session_id":     "ses_0123456789",
		"session_update": "agent_message_chunk",
		"messageId":      "msg_42",
		"content":        map[string]any{"type": "text", "text": "Running the tests now; this may take a moment."},
	}
}

func reportRate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkWrite: stamping, encoding and one log write per event.
func BenchmarkWrite(b *testing.B) {
	w := NewWriter(io.Discard, Stamp{RunID: "a1b2c3d4e5f60718", RunLabel: "bench"}, Options{})
	ev := benchEvent()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Write(ev); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b)
}

// BenchmarkWriteSubscribed adds one subscriber that keeps up and one that
// never reads (its queue stays full and drops).
func BenchmarkWriteSubscribed(b *testing.B) {
	w := NewWriter(io.Discard, Stamp{RunID: "a1b2c3d4e5f60718"}, Options{})
	live := w.Subscribe(0)
	defer live.Close()
	stuck := w.Subscribe(0)
	defer stuck.Close()
	go func() {
		for range live.C() {
		}
	}()
	ev := benchEvent()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Write(ev); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b)
}

func BenchmarkWriteParallel(b *testing.B) {
	w := NewWriter(io.Discard, Stamp{RunID: "a1b2c3d4e5f60718"}, Options{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ev := benchEvent()
		for pb.Next() {
			if _, err := w.Write(ev); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportRate(b)
}
