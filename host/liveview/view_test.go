package liveview

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/event"
)

// syncBuffer is a bytes.Buffer safe for the view's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func chunk(text string) event.Event {
	return event.Event{"event": "agent.message_chunk", "content": map[string]any{"type": "text", "text": text}}
}

// turn writes a small turn: text, a tool call, a permission and its answer.
func turn(t *testing.T, w *event.Writer) {
	t.Helper()
	for _, ev := range []event.Event{
		{"event": "session.start", "backend": "scripted", "dir": "/w"},
		chunk("Hello, "), chunk("world\n"),
		{"event": "tool.call", "toolCallId": "t1", "title": "ls -la", "kind": "execute", "status": "pending"},
		{"event": "tool.call_update", "toolCallId": "t1", "status": "completed"},
		{"event": "avenor.watchdog", "kind": "tool", "tool": "t1", "idle_for_ms": 2493, "action": "warn", "evidence": map[string]any{}},
		{"event": "permission.request", "request_id": "7", "question": "Run rm?", "resolver": "file",
			"options": []any{map[string]any{"optionId": "allow", "kind": "allow_once"}, map[string]any{"optionId": "deny", "kind": "reject"}}},
		{"event": "permission.response", "request_id": "7", "option_id": "deny", "kind": "reject", "source": "file"},
		chunk("done"),
		{"event": "session.end", "stop_reason": "end_turn", "usage": map[string]any{"input_tokens": 12, "output_tokens": 34}},
	} {
		if _, err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
}

func TestViewPlain(t *testing.T) {
	w := event.NewWriter(nil, event.Stamp{RunID: "r"}, event.Options{})
	defer w.Close()
	var out syncBuffer
	v := Start(w, Options{Out: &out, Mode: Plain, PermBase: "/tmp/run.perm"})
	turn(t, w)
	v.Finish(Summary{StopReason: "end_turn", EventLog: "ev.ndjson", Sentinel: "run.done", SessionID: "s1"})
	got := out.String()
	for _, want := range []string{
		"agent: Hello, world\n",
		"▸ ls -la [execute]\n",
		"  ✓ ls -la\n",
		"⏱ watchdog: ls -la: no CPU, no I/O for 2.5s → the turn goes on\n",
		"? permission 7: Run rm?\n",
		"  options: allow: Allow once, deny: Reject\n",
		"  answer: avenor answer --option allow /tmp/run.perm\n",
		"  ✗ rejected: deny by file\n",
		"agent: done\n",
		"■ end_turn · exit 0 · ",
		"12 in / 34 out tokens",
		"  session s1 · log ev.ndjson · sentinel run.done\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("plain view lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b") || strings.Contains(got, "\r") {
		t.Errorf("plain view has escapes or carriage returns:\n%q", got)
	}
}

func TestViewTTYColourAndNoColour(t *testing.T) {
	for _, color := range []bool{true, false} {
		w := event.NewWriter(nil, event.Stamp{RunID: "r"}, event.Options{})
		var out syncBuffer
		v := Start(w, Options{Out: &out, Mode: TTY, Color: color})
		turn(t, w)
		v.Finish(Summary{StopReason: "end_turn"})
		w.Close()
		got := out.String()
		if !strings.Contains(got, "Hello, world\n") || !strings.Contains(got, "ls -la") || !strings.Contains(got, "end_turn · exit 0") {
			t.Errorf("color=%v: tty view lacks the transcript:\n%q", color, got)
		}
		if hasColour := strings.Contains(got, "\x1b[3"); hasColour != color {
			t.Errorf("color=%v: colour escapes present = %v:\n%q", color, hasColour, got)
		}
	}
}

// TestViewNeverSlowsTheWriter: a view that cannot keep up loses events with
// a note; the writer's Write never waits for it.
func TestViewNeverSlowsTheWriter(t *testing.T) {
	w := event.NewWriter(nil, event.Stamp{RunID: "r"}, event.Options{})
	defer w.Close()
	block := make(chan struct{})
	out := &blockingWriter{block: block}
	v := Start(w, Options{Out: out, Mode: Plain, Queue: 4})
	start := time.Now()
	for i := 0; i < 1000; i++ {
		if _, err := w.Write(event.Event{"event": "tool.call", "title": "t", "toolCallId": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("1000 writes took %v with a stuck view", d)
	}
	close(block)
	v.Finish(Summary{})
	if got := out.String(); !strings.Contains(got, "events not shown: the live view fell behind") {
		t.Errorf("no lag note:\n%s", got)
	}
}

type blockingWriter struct {
	block chan struct{}
	syncBuffer
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	<-b.block
	return b.syncBuffer.Write(p)
}

func TestViewWriterKeepsLinesApart(t *testing.T) {
	w := event.NewWriter(nil, event.Stamp{RunID: "r"}, event.Options{})
	defer w.Close()
	var out syncBuffer
	v := Start(w, Options{Out: &out, Mode: TTY})
	if _, err := w.Write(chunk("partial")); err != nil {
		t.Fatal(err)
	}
	v.Finish(Summary{}) // drains first
	_, _ = v.Writer().Write([]byte("avenor: boom\n"))
	if got := out.String(); !strings.Contains(got, "partial\n") || !strings.Contains(got, "avenor: boom\n") {
		t.Errorf("stderr text not on a line of its own:\n%q", got)
	}
}

func TestChoose(t *testing.T) {
	for _, c := range []struct {
		progress string
		quiet    bool
		tty      bool
		want     Mode
		err      bool
	}{
		{"", false, true, TTY, false},
		{"", false, false, Off, false},
		{"", true, true, Off, false},
		{"plain", false, false, Plain, false},
		{"tty", false, false, TTY, false},
		{"off", false, true, Off, false},
		{"plain", true, true, Off, true},
		{"fancy", false, true, Off, true},
	} {
		got, err := Choose(c.progress, c.quiet, c.tty)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("Choose(%q, %v, %v) = %v, %v; want %v, err %v", c.progress, c.quiet, c.tty, got, err, c.want, c.err)
		}
	}
}

func TestSanitizeDropsEscapes(t *testing.T) {
	if got := sanitize("a\x1b[2Jb\tc\n\x07"); got != "a[2Jb\tc\n" {
		t.Errorf("sanitize = %q", got)
	}
}
