package control

import (
	"bufio"
	"encoding/json"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// benchSubscriber subscribes over the socket and reports, for each event,
// the time from Write to the notification being read.
func benchSubscriber(b *testing.B, path string) (net.Conn, *bufio.Reader) {
	nc, err := net.Dial("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	r := bufio.NewReaderSize(nc, 1<<20)
	if _, err := nc.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"subscribe"}` + "\n")); err != nil {
		b.Fatal(err)
	}
	if _, err := r.ReadBytes('\n'); err != nil {
		b.Fatal(err)
	}
	return nc, r
}

type benchNote struct {
	Params struct {
		Event sdk.EventType `json:"event"`
		Seq   int64         `json:"seq"`
		Sent  int64         `json:"sent_ns"`
	} `json:"params"`
}

// BenchmarkEventLatency1kPerSecond: one socket subscriber, events written
// at 1000/s; reports p50 and p99 of write → subscriber read.
func BenchmarkEventLatency1kPerSecond(b *testing.B) {
	rt := newFakeRuntime()
	s := NewServer(Config{Path: b.TempDir() + "/b.sock"})
	registerRun(s, rt, runOptions{})
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	nc, r := benchSubscriber(b, s.Path())
	defer nc.Close()
	lat := make([]time.Duration, 0, b.N)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for len(lat) < b.N {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			now := time.Now().UnixNano()
			var n benchNote
			if json.Unmarshal(line, &n) == nil && n.Params.Sent > 0 {
				lat = append(lat, time.Duration(now-n.Params.Sent))
			}
		}
	}()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	b.ResetTimer()
	for range b.N {
		<-tick.C
		if _, err := rt.w.Write(event.Event{"event": "agent.message_chunk", "sent_ns": time.Now().UnixNano(),
			"content": map[string]any{"type": "text", "text": "some streamed text of a typical chunk"}}); err != nil {
			b.Fatal(err)
		}
	}
	<-done
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
}

// BenchmarkFanout10Subscribers: ten socket subscribers; the writer goes as
// fast as the slowest subscriber keeps within half its queue, so nothing is
// dropped: events/s is the maximum sustained rate with ten subscribers.
func BenchmarkFanout10Subscribers(b *testing.B) {
	rt := newFakeRuntime()
	s := NewServer(Config{Path: b.TempDir() + "/b.sock"})
	registerRun(s, rt, runOptions{})
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const subs = 10
	var wg sync.WaitGroup
	var lags atomic.Int64
	last := make([]atomic.Int64, subs)
	for i := range subs {
		nc, r := benchSubscriber(b, s.Path())
		defer nc.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for last[i].Load() < int64(b.N) {
				line, err := r.ReadBytes('\n')
				if err != nil {
					return
				}
				var n benchNote
				_ = json.Unmarshal(line, &n)
				if n.Params.Event == event.TypeSubscriberLagged {
					lags.Add(1)
				}
				if n.Params.Seq > 0 {
					last[i].Store(n.Params.Seq)
				}
			}
		}()
	}
	slowest := func() int64 {
		m := last[0].Load()
		for i := 1; i < subs; i++ {
			m = min(m, last[i].Load())
		}
		return m
	}
	b.ResetTimer()
	t0 := time.Now()
	for k := 1; k <= b.N; k++ {
		for int64(k)-slowest() > SubscriberQueue/2 {
			runtime.Gosched()
		}
		if _, err := rt.w.Write(event.Event{"event": "agent.message_chunk",
			"content": map[string]any{"type": "text", "text": "some streamed text of a typical chunk"}}); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "events/s")
	b.ReportMetric(float64(lags.Load()), "lag-notices")
}
