package httpdebug

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/avenor-go/avenor/host/event"
)

// readFrame reads one SSE frame, up to and including its blank line.
func readFrame(t *testing.T, r io.Reader) string {
	t.Helper()
	var b []byte
	one := make([]byte, 1)
	for !bytes.HasSuffix(b, []byte("\n\n")) {
		if _, err := io.ReadFull(r, one); err != nil {
			t.Fatalf("reading a frame after %q: %v", b, err)
		}
		b = append(b, one[0])
	}
	return string(b)
}

func frame(line []byte) string { return "event: event\ndata: " + string(line) + "\n\n" }

// Events arrive as `event: event\ndata: <the NDJSON line>\n\n`, and the
// stream ends once the run has ended and its last event was sent.
func TestEventsStreamsNDJSONLinesUntilTheRunEnds(t *testing.T) {
	rt := newFakeRuntime("")
	run := newOneShot(rt, nil)
	s := start(t, Config{Run: run})
	resp := request(t, client(t), s, "GET", "/events", "")
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" ||
		resp.Header.Get("Cache-Control") != "no-cache" || resp.Header.Get("Connection") != "keep-alive" {
		t.Fatalf("GET /events: %d %v", resp.StatusCode, resp.Header)
	}
	var want strings.Builder
	for _, ev := range []event.Event{
		{"event": "session.start", "session_id": "ses_1"},
		{"event": "agent.message_chunk", "content": map[string]any{"type": "text", "text": "a <b> & \"c\"\nd"}},
		{"event": "tool.call", "toolCallId": "t1", "title": "go test ./...", "kind": "execute", "status": "pending", "n": 1.5},
		{"event": "custom.thing", "nested": map[string]any{"z": []any{1, "two", nil}, "a": true}},
		{"event": "session.end", "stop_reason": "end_turn", "final_output": "done"},
	} {
		want.WriteString(frame(rt.write(t, ev)))
	}
	run.End()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		t.Fatalf("stream:\n%s\nwant:\n%s", got, want.String())
	}
}

// ?token= opens /events (an EventSource cannot send headers); replay,
// limit and after_seq work as the socket's subscribe, without repeats.
func TestEventsQueryTokenAndReplay(t *testing.T) {
	rt := newFakeRuntime("")
	run := newOneShot(rt, nil)
	s := start(t, Config{Run: run, RunID: "run1"})
	var lines [][]byte
	for i := range 5 {
		lines = append(lines, rt.write(t, event.Event{"event": "agent.message_chunk", "i": i}))
	}
	resp, err := client(t).Get(s.URL() + "/events?runtime_id=run1&replay=true&limit=3&after_seq=1&token=" + s.Token())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /events?token=: %d", resp.StatusCode)
	}
	for _, l := range lines[2:] { // the latest 3 after seq 1: seq 3, 4, 5
		if got := readFrame(t, resp.Body); got != frame(l) {
			t.Fatalf("replayed %q, want %q", got, frame(l))
		}
	}
	live := rt.write(t, event.Event{"event": "session.end", "stop_reason": "cancelled"})
	run.End()
	rest, _ := io.ReadAll(resp.Body)
	if string(rest) != frame(live) {
		t.Fatalf("after the replay: %q, want %q", rest, frame(live))
	}
}

// final_output is bounded to 4096 runes on the stream, as on the socket.
func TestEventsTruncateFinalOutput(t *testing.T) {
	rt := newFakeRuntime("")
	run := newOneShot(rt, nil)
	s := start(t, Config{Run: run})
	resp := request(t, client(t), s, "GET", "/events", "")
	defer resp.Body.Close()
	rt.write(t, event.Event{"event": "session.end", "stop_reason": "end_turn", "final_output": strings.Repeat("é", 5000)})
	f := readFrame(t, resp.Body)
	var ev map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimPrefix(f, "event: event\ndata: "), "\n\n")), &ev); err != nil {
		t.Fatal(err)
	}
	if out, _ := ev["final_output"].(string); utf8.RuneCountInString(out) != 4096 || ev["final_output_truncated"] != true {
		t.Fatalf("final_output of %d runes, truncated %v", utf8.RuneCountInString(out), ev["final_output_truncated"])
	}
	if !strings.Contains(rt.log.String(), strings.Repeat("é", 5000)) {
		t.Fatal("the log lost the complete final_output")
	}
}

// countingTarget counts the subscriptions closed.
type countingTarget struct {
	Target
	closed atomic.Int32
}

type countingSub struct {
	Subscription
	t *countingTarget
}

func (c countingSub) Close() {
	c.Subscription.Close()
	c.t.closed.Add(1)
}

func (c *countingTarget) Subscribe(o SubscribeOptions) (Subscription, error) {
	sub, err := c.Target.Subscribe(o)
	return countingSub{sub, c}, err
}

// A client that goes ends its stream and its subscription; the run goes on.
func TestEventsEndWhenTheClientGoes(t *testing.T) {
	rt := newFakeRuntime("")
	target := &countingTarget{Target: newOneShot(rt, nil)}
	s := start(t, Config{Run: target})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL()+"/events", nil)
	req.Header.Set(TokenHeader, s.Token())
	resp, err := client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rt.write(t, event.Event{"event": "agent.message_chunk"})
	readFrame(t, resp.Body)
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for target.closed.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the subscription outlived its client")
		}
		time.Sleep(5 * time.Millisecond)
	}
	rt.write(t, event.Event{"event": "agent.message_chunk"}) // the runtime is unaffected
}

// Shutdown lets a stream deliver what the run wrote, then ends it; a
// stream opened after the end is empty.
func TestShutdownDrainsStreams(t *testing.T) {
	rt := newFakeRuntime("")
	run := newOneShot(rt, nil)
	s, err := Start(context.Background(), Config{Addr: ":0", Run: run})
	if err != nil {
		t.Fatal(err)
	}
	c := client(t)
	resp := request(t, c, s, "GET", "/events", "")
	defer resp.Body.Close()
	var want strings.Builder
	for i := range 200 {
		want.WriteString(frame(rt.write(t, event.Event{"event": "agent.message_chunk", "i": i})))
	}
	run.End()
	late := request(t, c, s, "GET", "/events", "")
	if b, _ := io.ReadAll(late.Body); len(b) != 0 {
		t.Fatalf("a stream opened after the end got %q", b)
	}
	late.Body.Close()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- s.Shutdown(ctx)
	}()
	got, _ := io.ReadAll(resp.Body)
	if string(got) != want.String() {
		t.Fatalf("drained %d bytes, want %d", len(got), want.Len())
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// A stream that never ends by itself (stable's all-runtimes stream, or a
// run that was not ended) ends at Close.
func TestCloseEndsOpenStreams(t *testing.T) {
	s, err := Start(context.Background(), Config{Addr: ":0", Run: newOneShot(newFakeRuntime(""), nil)})
	if err != nil {
		t.Fatal(err)
	}
	resp := request(t, client(t), s, "GET", "/events", "")
	defer resp.Body.Close()
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	_, _ = io.ReadAll(resp.Body)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung on an open stream")
	}
}
