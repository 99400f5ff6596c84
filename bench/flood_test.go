package bench

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkFlood: the scripted plugin emits events as fast as it can; the
// host stamps, encodes and writes each one. One op is one whole run of
// floodEvents events (launch, open, turn, close), reported as events/s.
func BenchmarkFlood(b *testing.B) {
	const floodEvents = 20000
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			state := b.TempDir()
			var total int64
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				w := &countingWriter{}
				start := time.Now()
				run(b, m, "scripted", fmt.Sprintf("flood %d", floodEvents), state, w)
				elapsed += time.Since(start)
				total += w.lines.Load()
			}
			b.ReportMetric(float64(total)/elapsed.Seconds(), "events/s")
		})
	}
}

// BenchmarkRunFixedCost: the smallest real turn (one message chunk) through
// a whole run: launch, handshake, open, prompt, session.end, close.
func BenchmarkRunFixedCost(b *testing.B) {
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			state := b.TempDir()
			for i := 0; i < b.N; i++ {
				run(b, m, "scripted", "say hi", state, &countingWriter{})
			}
		})
	}
}

// BenchmarkEchoTurn: one turn of the echo example (which paces its chunks
// like an agent, ~20 ms apart) through a whole run in each mode.
func BenchmarkEchoTurn(b *testing.B) {
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			state := b.TempDir()
			for i := 0; i < b.N; i++ {
				run(b, m, "echo", "hello bench", state, &countingWriter{})
			}
		})
	}
}
