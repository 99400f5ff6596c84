package event

import (
	"bytes"
	"strings"
	"testing"
)

// The ring keeps lines, not maps: a replayed event must encode to the very
// bytes its line has in the log, and carry seq and ts as the int64 a live
// event has.
func TestHistoryReplaysExactLines(t *testing.T) {
	events := []Event{
		{"event": "agent.message_chunk", "delta": "héllo <&> \u2028 😀", "n": 1.5},
		{"event": "tool.call", "raw_input": map[string]any{"big": 1e21, "small": 1e-7, "int": float64(9007199254740991), "list": []any{1.0, "x", nil, true}}},
		{"event": "session.end", "stop_reason": "end_turn", "usage": map[string]any{"input_tokens": int64(123456789012)}, "final_output": strings.Repeat("z", 70_000)},
	}
	var log bytes.Buffer
	w := NewWriter(&log, Stamp{RunID: "r1", Now: newFakeClock(5000).Now}, Options{})
	for _, ev := range events {
		if _, err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.SplitAfter(strings.TrimSuffix(log.String(), "\n"), "\n")
	h := w.History(0, 0)
	if len(h) != len(lines) {
		t.Fatalf("history has %d events, log %d lines", len(h), len(lines))
	}
	var enc lineEncoder
	for i, ev := range h {
		got, err := enc.appendLine(nil, ev)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSuffix(lines[i], "\n") + "\n"
		if string(got) != want {
			t.Errorf("replayed event %d encodes to\n%s\nthe log has\n%s", i, got, want)
		}
		if seq, ok := ev[KeySeq].(int64); !ok || seq != int64(i+1) {
			t.Errorf("replayed event %d: seq %#v, want int64 %d", i, ev[KeySeq], i+1)
		}
		if _, ok := ev[KeyTS].(int64); !ok {
			t.Errorf("replayed event %d: ts %#v, want int64", i, ev[KeyTS])
		}
	}
}
