package event

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fakeClock starts at a fixed instant and advances 1 ms per reading.
type fakeClock struct{ ms atomic.Int64 }

func newFakeClock(startMS int64) *fakeClock {
	c := &fakeClock{}
	c.ms.Store(startMS - 1)
	return c
}

func (c *fakeClock) Now() time.Time { return time.UnixMilli(c.ms.Add(1)) }

func testStamp() Stamp {
	return Stamp{RunID: "a1b2c3d4e5f60718", RunLabel: "phase-1", Now: newFakeClock(1700000000000).Now}
}

// The exact bytes of a stream: sorted keys, HTML escaping, numbers as Go
// and encoding/json print them, the stamped envelope. Compared with
// testdata/stream.golden.ndjson; run with -update to rewrite it.
func TestWriteGolden(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, testStamp(), Options{})

	var decoded map[string]any
	if err := json.Unmarshal([]byte(`{"event":"avenor.native","payload":{"n":1,"big":1e21,"f":100.0,"neg":-0.5,"arr":[1,"two",null,true]}}`), &decoded); err != nil {
		t.Fatal(err)
	}
	events := []Event{
		{"event": "session.start", "backend": "opencode-acp", "dir": "/tmp/x", "plugin": "opencode", "plugin_version": "1.2.3", "protocol_version": 1},
		{"event": "agent.message_chunk", "session_id": "ses_1", "session_update": "agent_message_chunk",
			"content": map[string]any{"type": "text", "text": "a < b && c > d \u2028 é 🐴"}, "messageId": "m1"},
		{"event": "tool.call", "session_id": "", "toolCallId": "t1", "title": "go test ./...", "kind": "bash", "status": "pending",
			"rawInput": map[string]any{"command": "echo '<script>'"}},
		{"event": "agent.status", "phase": "working", "source": "avenor", "label": "go test ./...", "ts": int64(1234)},
		{"event": "avenor.retry", "attempt": 2, "max_retries": 3, "run_id": "explicit-run", "run_label": "explicit-label"},
		Event(decoded),
		{"event": "custom.thing", "float": 1.5, "int": 42, "uint": uint8(7), "neg": -3, "nil": nil, "bool": false, "nested": map[string]any{"z": 1, "a": 2}},
		{"event": "session.end", "session_id": "ses_1", "stop_reason": "end_turn", "final_output": "done & dusted",
			"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15, "cached_read_tokens": 0}},
	}
	for _, ev := range events {
		if _, err := w.Write(ev); err != nil {
			t.Fatalf("Write(%v): %v", ev, err)
		}
	}

	golden := filepath.Join("testdata", "stream.golden.ndjson")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("stream differs from %s\n got:\n%s\nwant:\n%s", golden, buf.Bytes(), want)
	}
}

// Pins the rules the golden file shows, one by one, so a wrong golden
// file cannot be "updated" into passing.
func TestWriteEncodingRules(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, Stamp{RunID: "r1", Now: newFakeClock(1700000000000).Now}, Options{})
	tests := []struct {
		name string
		ev   Event
		want string
	}{
		{"keys sorted, stamped, no label",
			Event{"event": "x", "b": 1, "a": 2},
			`{"a":2,"b":1,"event":"x","run_id":"r1","seq":1,"ts":1700000000000}`},
		{"html escaped",
			Event{"event": "x", "s": "<a href=\"x\">&</a>"},
			`{"event":"x","run_id":"r1","s":"\u003ca href=\"x\"\u003e\u0026\u003c/a\u003e","seq":2,"ts":1700000000001}`},
		{"line separators escaped, utf-8 kept",
			Event{"event": "x", "s": "\u2028\u2029é\t\n"},
			`{"event":"x","run_id":"r1","s":"\u2028\u2029é\t\n","seq":3,"ts":1700000000002}`},
		{"numbers",
			Event{"event": "x", "f": 1.5, "whole": 100.0, "big": 1e21, "small": 1e-7, "i": int64(math.MaxInt64)},
			`{"big":1e+21,"event":"x","f":1.5,"i":9223372036854775807,"run_id":"r1","seq":4,"small":1e-7,"ts":1700000000003,"whole":100}`},
		{"empty session_id removed, present ts and run_id kept",
			Event{"event": "x", "session_id": "", "ts": 5, "run_id": "other"},
			`{"event":"x","run_id":"other","seq":5,"ts":5}`},
		{"null session_id removed",
			Event{"event": "x", "session_id": nil},
			`{"event":"x","run_id":"r1","seq":6,"ts":1700000000004}`},
		{"incoming seq overwritten",
			Event{"event": "x", "seq": 99},
			`{"event":"x","run_id":"r1","seq":7,"ts":1700000000005}`},
	}
	for _, tt := range tests {
		buf.Reset()
		if _, err := w.Write(tt.ev); err != nil {
			t.Fatalf("%s: Write: %v", tt.name, err)
		}
		if got := buf.String(); got != tt.want+"\n" {
			t.Errorf("%s\n got: %s\nwant: %s", tt.name, got, tt.want)
		}
	}
}

func TestWriteStamping(t *testing.T) {
	w := NewWriter(nil, Stamp{RunID: "r", RunLabel: "l", RuntimeID: "rt_1", Now: newFakeClock(1000).Now}, Options{})
	in := Event{"event": "x", "k": "v"}
	got, err := w.Write(in)
	if err != nil {
		t.Fatal(err)
	}
	want := Event{"event": "x", "k": "v", "seq": int64(1), "ts": int64(1000), "run_id": "r", "run_label": "l", "runtime_id": "rt_1"}
	assertEvent(t, got, want)
	if len(in) != 2 {
		t.Errorf("Write modified its argument: %v", in)
	}

	w.SetSessionID("ses_rt")
	got, _ = w.Write(Event{"event": "y"})
	if got["session_id"] != "ses_rt" {
		t.Errorf("runtime session not stamped: %v", got)
	}
	got, _ = w.Write(Event{"event": "y", "session_id": ""})
	if got["session_id"] != "ses_rt" {
		t.Errorf("empty session_id not replaced by the runtime's: %v", got)
	}
	got, _ = w.Write(Event{"event": "y", "session_id": "ses_ev"})
	if got["session_id"] != "ses_ev" {
		t.Errorf("event's own session_id overridden: %v", got)
	}
	w.SetSessionID("")
	got, _ = w.Write(Event{"event": "y"})
	if _, ok := got["session_id"]; ok {
		t.Errorf("session_id stamped after SetSessionID(\"\"): %v", got)
	}
	if got["seq"] != int64(5) || w.LatestSeq() != 5 {
		t.Errorf("seq = %v, LatestSeq = %d, want 5", got["seq"], w.LatestSeq())
	}
}

func TestWriteRejects(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, Stamp{}, Options{})
	for _, ev := range []Event{nil, {}, {"event": ""}, {"event": 3}} {
		if _, err := w.Write(ev); !errors.Is(err, ErrNoType) {
			t.Errorf("Write(%v) = %v, want ErrNoType", ev, err)
		}
	}
	_, err := w.Write(Event{"event": "bad", "v": math.NaN()})
	if err == nil || !strings.Contains(err.Error(), "bad") {
		t.Errorf("Write of an unencodable event = %v, want an error naming its type", err)
	}
	if buf.Len() != 0 || w.LatestSeq() != 0 || len(w.History(0, 0)) != 0 {
		t.Errorf("a rejected event was published: log %q, seq %d", buf.String(), w.LatestSeq())
	}
	if w.Err() != nil {
		t.Errorf("a rejected event set the sticky log error: %v", w.Err())
	}
	if _, err := w.Write(Event{"event": "ok"}); err != nil || w.LatestSeq() != 1 {
		t.Errorf("after rejections: err %v, seq %d, want nil, 1", err, w.LatestSeq())
	}

	w.Close()
	if _, err := w.Write(Event{"event": "late"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
}

type failingWriter struct {
	fail  atomic.Bool
	lines atomic.Int64
}

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.fail.Load() {
		return 0, errors.New("disk full")
	}
	f.lines.Add(1)
	return len(p), nil
}

// A log that stops accepting lines must not stop the history or the
// subscribers; the error is returned and kept, and the log, incomplete for
// good, takes no more lines even when it would.
func TestWriteErrorDoesNotStopFanOut(t *testing.T) {
	out := &failingWriter{}
	w := NewWriter(out, Stamp{}, Options{})
	sub := w.Subscribe(8)
	defer sub.Close()

	if _, err := w.Write(Event{"event": "a"}); err != nil {
		t.Fatal(err)
	}
	out.fail.Store(true)
	ev, err := w.Write(Event{"event": "b"})
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "b event") {
		t.Fatalf("Write to a failing log = %v, want the error naming the event", err)
	}
	if ev["seq"] != int64(2) {
		t.Fatalf("stamped event not returned on a log error: %v", ev)
	}
	out.fail.Store(false)
	if _, err := w.Write(Event{"event": "c"}); err != nil {
		t.Fatalf("Write after the failure reported it again: %v", err)
	}
	if w.Err() == nil || !strings.Contains(w.Err().Error(), "disk full") {
		t.Fatalf("Err() = %v, want the first log error", w.Err())
	}
	if got := len(w.History(0, 0)); got != 3 {
		t.Fatalf("history holds %d events, want 3", got)
	}
	for _, want := range []sdk.EventType{"a", "b", "c"} {
		if got := receive(t, sub).Type(); got != want {
			t.Fatalf("subscriber got %q, want %q", got, want)
		}
	}
	if out.lines.Load() != 1 {
		t.Fatalf("log got %d lines, want 1 (none after the failure)", out.lines.Load())
	}
}

// lineWriter checks that every Write call holds whole lines only.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	calls int
	bad   []string
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if len(p) == 0 || p[len(p)-1] != '\n' {
		l.bad = append(l.bad, string(p))
	}
	return l.buf.Write(p)
}

// Many goroutines writing at once: whole lines per Write call (several
// when they queue up together), and seq runs 1..N in file order with
// nothing missing or repeated.
func TestWriteConcurrent(t *testing.T) {
	const goroutines, perG = 16, 500
	out := &lineWriter{}
	w := NewWriter(out, testStamp(), Options{})
	sub := w.Subscribe(goroutines * perG)
	defer sub.Close()

	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				if _, err := w.Write(Event{"event": "x", "g": g, "i": i, "text": strings.Repeat("y", i%64)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()

	if out.calls > goroutines*perG || len(out.bad) > 0 {
		t.Fatalf("%d Write calls for %d events; %d were not whole lines", out.calls, goroutines*perG, len(out.bad))
	}
	sc := bufio.NewScanner(&out.buf)
	lastByG := map[float64]float64{}
	var seq int64
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d: %v", seq+1, err)
		}
		seq++
		if m["seq"] != float64(seq) {
			t.Fatalf("line %d has seq %v", seq, m["seq"])
		}
		// Each goroutine's own events keep their order.
		g, i := m["g"].(float64), m["i"].(float64)
		if last, ok := lastByG[g]; ok && i != last+1 {
			t.Fatalf("goroutine %v: event %v after %v", g, i, last)
		}
		lastByG[g] = i
	}
	if seq != goroutines*perG || w.LatestSeq() != seq {
		t.Fatalf("%d lines, LatestSeq %d, want %d", seq, w.LatestSeq(), goroutines*perG)
	}
	// The subscriber saw the same order.
	for want := int64(1); want <= seq; want++ {
		if got := receive(t, sub)["seq"]; got != want {
			t.Fatalf("subscriber got seq %v, want %d", got, want)
		}
	}
}

func TestHistory(t *testing.T) {
	w := NewWriter(nil, Stamp{}, Options{History: 4})
	if got := w.History(0, 0); len(got) != 0 {
		t.Fatalf("empty writer history = %v", got)
	}
	for range 6 {
		if _, err := w.Write(Event{"event": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		afterSeq int64
		limit    int
		want     []int64
	}{
		{"all the ring holds", 0, 0, []int64{3, 4, 5, 6}},
		{"limit keeps the latest", 0, 2, []int64{5, 6}},
		{"after cursor", 4, 0, []int64{5, 6}},
		{"after cursor and limit", 3, 1, []int64{6}},
		{"limit above size", 0, 100, []int64{3, 4, 5, 6}},
		{"cursor at latest", 6, 0, nil},
		{"cursor ahead", 9, 0, nil},
		{"cursor older than the ring", 1, 0, []int64{3, 4, 5, 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := seqs(w.History(tt.afterSeq, tt.limit)); !equalSeqs(got, tt.want) {
				t.Fatalf("History(%d, %d) = %v, want %v", tt.afterSeq, tt.limit, got, tt.want)
			}
		})
	}
	if w.LatestSeq() != 6 {
		t.Fatalf("LatestSeq = %d, want 6", w.LatestSeq())
	}
}

func TestHistoryDefaultSize(t *testing.T) {
	w := NewWriter(nil, Stamp{}, Options{})
	for range DefaultHistory + 10 {
		if _, err := w.Write(Event{"event": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	h := w.History(0, 0)
	if len(h) != DefaultHistory || h[0]["seq"] != int64(11) {
		t.Fatalf("history holds %d events from seq %v, want %d from 11", len(h), h[0]["seq"], DefaultHistory)
	}
}

func assertEvent(t *testing.T, got, want Event) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Fatalf("event\n got: %s\nwant: %s", g, w)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("event[%q] = %#v, want %#v", k, got[k], v)
		}
	}
}

func seqs(evs []Event) []int64 {
	var out []int64
	for _, ev := range evs {
		out = append(out, ev["seq"].(int64))
	}
	return out
}

func equalSeqs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func receive(t *testing.T, s *Subscription) Event {
	t.Helper()
	select {
	case ev, ok := <-s.C():
		if !ok {
			t.Fatal("subscription closed")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
		return nil
	}
}
