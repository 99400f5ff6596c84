package event

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/avenor-go/avenor/sdk/jsonenc"
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

// BenchmarkWriteFields: BenchmarkWrite's event as a plugin sends it, scanned
// and stamped by splicing (the plugin path since 2026-12-02), against
// decoding it into a map for Write (the path before).
func BenchmarkWriteFields(b *testing.B) {
	data, err := new(jsonenc.Encoder).AppendObject(nil, func() map[string]any {
		ev := benchEvent()
		delete(ev, "event")
		return ev
	}())
	if err != nil {
		b.Fatal(err)
	}
	stamp := Stamp{RunID: "a1b2c3d4e5f60718", RunLabel: "bench"}
	b.Run("splice", func(b *testing.B) {
		w := NewWriter(io.Discard, stamp, Options{})
		b.ReportAllocs()
		for b.Loop() {
			f, ok := ScanFields("agent.message_chunk", data)
			if !ok {
				b.Fatal("not canonical")
			}
			if _, err := w.WriteFields(f, ""); err != nil {
				b.Fatal(err)
			}
			f.Release()
		}
		reportRate(b)
	})
	b.Run("decode-write", func(b *testing.B) {
		w := NewWriter(io.Discard, stamp, Options{})
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				b.Fatal(err)
			}
			m["event"] = "agent.message_chunk"
			if _, err := w.WriteOwned(m); err != nil {
				b.Fatal(err)
			}
		}
		reportRate(b)
	})
}

// BenchmarkDecodeLine: a spliced line decoded for a reader that wants the
// map (subscribers, OnEvent), against json.Unmarshal.
func BenchmarkDecodeLine(b *testing.B) {
	ev := benchEvent()
	ev["seq"], ev["ts"], ev["run_id"] = int64(123456), int64(1700000000000), "a1b2c3d4e5f60718"
	line, err := new(jsonenc.Encoder).AppendObject(nil, ev)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("canonical", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeCanonical(line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
