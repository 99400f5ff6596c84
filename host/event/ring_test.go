package event

import (
	"bytes"
	"fmt"
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

// The ring's arena: the latest size lines in order whatever their sizes, a
// kept line never changes after later pushes (subscribers share it), the
// storage stays within a quarter of the live lines (plus the newest line),
// and trim fits it exactly.
func TestRingArena(t *testing.T) {
	line := func(seq int, n int) []byte {
		b := []byte(fmt.Sprintf(`{"event":"x","seq":%d,"pad":"`, seq))
		b = append(b, bytes.Repeat([]byte{byte('a' + seq%26)}, n)...)
		return append(b, '"', '}')
	}
	for _, tc := range []struct {
		name   string
		size   int
		pushes int
		bytes  func(seq int) int
	}{
		{"one slot", 1, 10, func(int) int { return 10 }},
		{"fewer than the window", 256, 5, func(int) int { return 200 }},
		{"exactly the window", 256, 256, func(int) int { return 200 }},
		{"a flood past the window", 256, 3000, func(int) int { return 250 }},
		{"mixed sizes", 7, 100, func(seq int) int { return []int{0, 5, 3000, 40, 70_000, 1, 900}[seq%7] }},
		{"a window of 3, lines bigger than the first arena", 3, 20, func(seq int) int { return 2000 + seq }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRing(tc.size)
			type keptLine struct {
				seq  int
				kept []byte
			}
			var kept []keptLine
			for seq := 1; seq <= tc.pushes; seq++ {
				l := line(seq, tc.bytes(seq))
				k := r.push(int64(seq), l)
				if !bytes.Equal(k, l) {
					t.Fatalf("push %d kept %q", seq, k)
				}
				kept = append(kept, keptLine{seq, k})
				if limit := r.live + r.live/4 + len(l); cap(r.arena) > max(minArena, limit) {
					t.Fatalf("after push %d the arena holds %d bytes for %d live", seq, cap(r.arena), r.live)
				}
				if cap(r.entries) > tc.size {
					t.Fatalf("after push %d the ring has %d entries, over its size %d", seq, cap(r.entries), tc.size)
				}
			}
			for _, k := range kept {
				if want := line(k.seq, tc.bytes(k.seq)); !bytes.Equal(k.kept, want) {
					t.Fatalf("the line kept for seq %d changed after later pushes", k.seq)
				}
			}
			check := func(when string) {
				got := r.after(0, 0)
				want := min(tc.pushes, tc.size)
				if len(got) != want {
					t.Fatalf("%s: %d events, want %d", when, len(got), want)
				}
				for i, ev := range got {
					seq := tc.pushes - want + 1 + i
					if ev[KeySeq] != int64(seq) || len(ev["pad"].(string)) != tc.bytes(seq) {
						t.Fatalf("%s: event %d is seq %v with %d pad bytes, want seq %d with %d", when, i, ev[KeySeq], len(ev["pad"].(string)), seq, tc.bytes(seq))
					}
				}
			}
			check("before trim")
			r.trim()
			if cap(r.arena) != r.live {
				t.Errorf("trim left %d bytes for %d live", cap(r.arena), r.live)
			}
			check("after trim")
		})
	}
}
