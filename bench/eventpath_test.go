package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// The event-path cases of the benchmark plan that BenchmarkFlood leaves out: a
// raw baseline next to the flood through the host to a real file, the flood
// to a control-socket subscriber, emit → subscriber latency at 1k events/s,
// and the permission round trip through answer_permission.

const pathFloodEvents = 20000

// BenchmarkFloodToFile: the flood through the whole host into a real file,
// each mode, next to two raw baselines: a Go loop appending the very lines
// the host wrote to a file of its own, one write per line (what the host's
// writer did before it batched, until 2026-11-29) and through a 64 KiB buffer (the
// floor: what writing those bytes costs at all).
//
// Out of process, this process is the host alone (the plugin is a child), so
// host-cpu-us/event (user+system CPU of this process) and host-allocs/event
// (heap allocations in it) are the host's cost per event, and
// plugin-cpu-us/event the plugin's; in process they include the plugin's. The last case, ratios, relates the modes of this
// run: out/raw-batched and out/in, the figures with targets in bench/RESULTS.md,
// for the whole run and for its streaming window alone.
func BenchmarkFloodToFile(b *testing.B) {
	var lines [][]byte
	rates := map[string]float64{}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			state, dir := b.TempDir(), b.TempDir()
			var total int64
			var elapsed, stream, cpu, plugin time.Duration
			var allocs uint64
			for i := 0; i < b.N; i++ {
				path := filepath.Join(dir, fmt.Sprintf("events-%d.ndjson", i))
				f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
				if err != nil {
					b.Fatal(err)
				}
				cpu0, allocs0 := processCost()
				child0 := childrenCPU()
				start := time.Now()
				tf := &timedFile{File: f}
				run(b, m, "scripted", fmt.Sprintf("flood %d", pathFloodEvents), state, tf)
				elapsed += time.Since(start)
				stream += tf.last.Sub(tf.first)
				cpu1, allocs1 := processCost()
				cpu += cpu1 - cpu0
				plugin += childrenCPU() - child0
				allocs += allocs1 - allocs0
				f.Close()
				data, _ := os.ReadFile(path)
				ls := bytes.SplitAfter(data, []byte("\n"))
				total += int64(len(ls) - 1)
				if lines == nil {
					lines = ls[:len(ls)-1]
				}
			}
			rates[m.name] = float64(total) / elapsed.Seconds()
			rates[m.name+"/stream"] = float64(total) / stream.Seconds()
			b.ReportMetric(rates[m.name], "events/s")
			b.ReportMetric(rates[m.name+"/stream"], "stream-events/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(total), "host-cpu-us/event")
			b.ReportMetric(float64(allocs)/float64(total), "host-allocs/event")
			if plugin > 0 {
				b.ReportMetric(float64(plugin.Microseconds())/float64(total), "plugin-cpu-us/event")
			}
		})
	}
	for _, raw := range []struct {
		name     string
		buffered bool
	}{{"raw-baseline", false}, {"raw-batched", true}} {
		b.Run(raw.name, func(b *testing.B) {
			dir := b.TempDir()
			var total int64
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("raw-%d.ndjson", i)), os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o644)
				if err != nil {
					b.Fatal(err)
				}
				var w io.Writer = f
				bw := bufio.NewWriterSize(f, 64<<10)
				if raw.buffered {
					w = bw
				}
				start := time.Now()
				for _, l := range lines {
					if _, err := w.Write(l); err != nil {
						b.Fatal(err)
					}
				}
				if err := bw.Flush(); err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(start)
				f.Close()
				total += int64(len(lines))
			}
			rates[raw.name] = float64(total) / elapsed.Seconds()
			b.ReportMetric(rates[raw.name], "events/s")
		})
	}
	b.Run("ratios", func(b *testing.B) {
		out := rates["out-of-process"]
		if in := rates["in-process"]; in > 0 {
			b.ReportMetric(out/in, "out/in")
		}
		if raw := rates["raw-batched"]; raw > 0 {
			b.ReportMetric(out/raw, "out/raw-batched")
		}
		// The same once the run streams: from the log's first write to its
		// last, leaving out what a run costs before its first event and
		// after its last (launch, handshake, teardown: BenchmarkRunFixedCost).
		stream := rates["out-of-process/stream"]
		if in := rates["in-process/stream"]; in > 0 {
			b.ReportMetric(stream/in, "stream-out/in")
		}
		if raw := rates["raw-batched"]; raw > 0 {
			b.ReportMetric(stream/raw, "stream-out/raw-batched")
		}
	})
}

// timedFile is the run's log file, noting when the host's first write to
// it began and its last one returned: the window in which the run streams.
// It keeps the file's Seek, by which the host's writer aligns its writes.
type timedFile struct {
	*os.File
	mu          sync.Mutex
	first, last time.Time
}

func (t *timedFile) Write(p []byte) (int, error) {
	start := time.Now()
	n, err := t.File.Write(p)
	t.mu.Lock()
	if t.first.IsZero() {
		t.first = start
	}
	t.last = time.Now()
	t.mu.Unlock()
	return n, err
}

// childrenCPU returns the CPU time of this process's children that have
// ended and been waited for: an out-of-process run's plugin, once the run
// is over.
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processCost returns this process's CPU time so far (user + system) and
// its heap allocations so far.
func processCost() (time.Duration, uint64) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ms.Mallocs
}

// startRun starts the built avenor on the scripted plugin with a control
// socket, subscribes to it before the turn's work begins (the script must
// open with a short sleep), and returns the subscription.
func startRun(b *testing.B, script string) (*client.Client, *client.Subscription, func()) {
	b.Helper()
	tmp, err := os.MkdirTemp("", "avb")
	if err != nil {
		b.Fatal(err)
	}
	sock := filepath.Join(tmp, "c.sock")
	cmd := exec.Command(avenorBinary(b), "--backend", "scripted", "--dir", tmp, "--control-socket", sock,
		"--on-event", filepath.Join(tmp, "events.ndjson"), "--prompt", script)
	cmd.Env = append(os.Environ(), "AVENOR_PLUGIN_PATH="+binDir, "TMPDIR="+tmp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var c *client.Client
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if c, err = client.Dial(ctx, sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			b.Fatalf("no control socket: %v\n%s", err, stderr.String())
		}
	}
	sub, err := c.Subscribe(ctx, client.SubscribeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return c, sub, func() {
		c.Close()
		if err := cmd.Wait(); err != nil {
			b.Errorf("avenor: %v\n%s", err, stderr.String())
		}
		os.RemoveAll(tmp)
	}
}

// BenchmarkFloodToSocketSubscriber: the flood through the built avenor to
// one control-socket subscriber; events/s counts the events it received,
// from its first message chunk to session.end. dropped counts events the
// subscriber never saw (seq gaps); lagged/op the subscriber.lagged notices
// the host sent for them.
func BenchmarkFloodToSocketSubscriber(b *testing.B) {
	var total, dropped, lagged int64
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		_, sub, done := startRun(b, fmt.Sprintf("sleep 300ms\nflood %d", pathFloodEvents))
		var first time.Time
		var got, lastSeq int64
		for ev := range sub.C() {
			if ev.Name == "subscriber.lagged" {
				lagged++
			}
			if ev.Name == "agent.message_chunk" && first.IsZero() {
				first = time.Now()
			}
			if ev.Seq > 0 {
				if lastSeq > 0 && ev.Seq != lastSeq+1 {
					dropped += ev.Seq - lastSeq - 1
				}
				lastSeq = ev.Seq
			}
			if !first.IsZero() {
				got++
			}
			if ev.Name == "session.end" {
				break
			}
		}
		elapsed += time.Since(first)
		total += got
		done()
	}
	b.ReportMetric(float64(total)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(dropped)/float64(b.N), "dropped/op")
	b.ReportMetric(float64(lagged)/float64(b.N), "lagged/op")
}

// tickerEnv makes this test binary a runtime that prints its clock
// (UnixNano) once a millisecond, BENCH_TICKER lines in all: run through the
// scripted plugin's `lines`, each line is one message chunk whose text says
// when the runtime emitted it.
const tickerEnv = "BENCH_TICKER"

func init() {
	n, err := strconv.Atoi(os.Getenv(tickerEnv))
	if err != nil || n <= 0 {
		return
	}
	w := bufio.NewWriter(os.Stdout)
	next := time.Now()
	for i := 0; i < n; i++ {
		next = next.Add(time.Millisecond)
		time.Sleep(time.Until(next))
		fmt.Fprintf(w, "%d\n", time.Now().UnixNano())
		w.Flush()
	}
	os.Exit(0)
}

// BenchmarkLatencyToSubscriber: a runtime emits 1 000 lines/s; each one's
// latency is the time from the runtime writing it to the socket subscriber
// decoding it (runtime pipe → plugin → gRPC → host → socket → client), a
// slight superset of the plugin emit → subscriber.
func BenchmarkLatencyToSubscriber(b *testing.B) {
	const perOp = 3000
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	for i := 0; i < b.N; i++ {
		_, sub, done := startRun(b, fmt.Sprintf("sleep 300ms\nlines %s=%d %s", tickerEnv, perOp, self))
		for ev := range sub.C() {
			if ev.Name == "agent.message_chunk" {
				now := time.Now()
				var f struct {
					Content struct{ Text string } `json:"content"`
				}
				if ev.Decode(&f) == nil {
					if ns, err := strconv.ParseInt(strings.TrimSpace(f.Content.Text), 10, 64); err == nil {
						lat = append(lat, now.Sub(time.Unix(0, ns)))
					}
				}
			}
			if ev.Name == "session.end" {
				break
			}
		}
		done()
	}
	if len(lat) < perOp*b.N*9/10 {
		b.Fatalf("%d latencies measured of %d lines", len(lat), perOp*b.N)
	}
	reportPercentiles(b, lat)
}

// BenchmarkPermissionRoundTrip: the plugin asks, the subscriber sees
// permission.request and answers through answer_permission, the plugin
// receives it and says so in a message chunk. Measured from the subscriber
// seeing the request to it seeing that chunk: the request → answer →
// plugin receives, plus one plugin → subscriber leg.
func BenchmarkPermissionRoundTrip(b *testing.B) {
	const perOp = 300
	script := "sleep 300ms\n" + strings.Repeat("permission tool=bash\n", perOp)
	var rtt []time.Duration
	for i := 0; i < b.N; i++ {
		// The subscribed client answers too: one connection.
		answer, tmpSub, done := startRun(b, script)
		ctx := context.Background()
		var asked time.Time
		for ev := range tmpSub.C() {
			switch ev.Name {
			case "permission.request":
				var f struct {
					RequestID string `json:"request_id"`
				}
				_ = ev.Decode(&f)
				asked = time.Now()
				if err := answer.AnswerPermission(ctx, f.RequestID, "allow", ""); err != nil {
					b.Fatalf("answer_permission: %v", err)
				}
			case "agent.message_chunk":
				if !asked.IsZero() {
					rtt = append(rtt, time.Since(asked))
					asked = time.Time{}
				}
			}
			if ev.Name == "session.end" {
				break
			}
		}
		done()
	}
	if len(rtt) != perOp*b.N {
		b.Fatalf("%d round trips measured of %d", len(rtt), perOp*b.N)
	}
	reportPercentiles(b, rtt)
}

func reportPercentiles(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	pct := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(d[len(d)-1].Microseconds())/1000, "max-ms")
}
