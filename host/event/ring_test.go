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

// The ring's arena: the latest size lines, each restored byte for byte
// whatever members were cut out of it, in order whatever their sizes; the
// storage stays within half the live lines more (plus the newest line),
// trim fits it exactly, and the pieces stay bounded while sessions come
// and go.
func TestRingArena(t *testing.T) {
	line := func(seq int, n int) []byte {
		b := fmt.Appendf(nil, `{"event":"t%d","inner":{"event":"decoy","session_id":"s%d","z":1},"pad":"`, seq%3, seq)
		b = append(b, bytes.Repeat([]byte{byte('a' + seq%26)}, n)...)
		return fmt.Appendf(b, `","run_id":"r1","run_label":"","runtime_id":"rt_1","seq":%d,"session_id":"ses_%d","ts":1}`, seq, seq/3)
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
		{"a flood past the window, sessions coming and going", 256, 3000, func(int) int { return 250 }},
		{"mixed sizes", 7, 100, func(seq int) int { return []int{0, 5, 3000, 40, 70_000, 1, 900}[seq%7] }},
		{"a window of 3, lines bigger than the first arena", 3, 20, func(seq int) int { return 2000 + seq }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRing(tc.size)
			maxLive, maxLine := 0, 0
			for seq := 1; seq <= tc.pushes; seq++ {
				l := line(seq, tc.bytes(seq))
				r.push(int64(seq), l, nil)
				maxLive, maxLine = max(maxLive, r.live), max(maxLine, len(l))
				if limit := (maxLive+maxLine)*5/4 + 1; cap(r.arena) > max(minArena, limit) {
					t.Fatalf("after push %d the arena holds %d bytes for %d live", seq, cap(r.arena), r.live)
				}
				if cap(r.entries) > tc.size || len(r.pieces) > maxPieces {
					t.Fatalf("after push %d the ring has %d entries (size %d) and %d pieces", seq, cap(r.entries), tc.size, len(r.pieces))
				}
			}
			check := func(when string) {
				want := min(tc.pushes, tc.size)
				if r.n != want {
					t.Fatalf("%s: %d entries, want %d", when, r.n, want)
				}
				compact, whole := 0, 0
				for i := range r.n {
					seq := tc.pushes - want + 1 + i
					e := r.at(i)
					got, wantLine := r.restore(nil, e), line(seq, tc.bytes(seq))
					if e.seq != int64(seq) || !bytes.Equal(got, wantLine) {
						t.Fatalf("%s: entry %d (seq %d) restores to\n%s\nwant seq %d\n%s", when, i, e.seq, got, seq, wantLine)
					}
					compact += e.n
					whole += len(wantLine)
				}
				if compact != r.live {
					t.Fatalf("%s: the entries hold %d bytes, live says %d", when, compact, r.live)
				}
				// At least event, run_id and runtime_id are cut from every line.
				if minCut := len(`"event":"t0","run_id":"r1","runtime_id":"rt_1",`); compact+r.n*minCut > whole {
					t.Errorf("%s: %d bytes kept for %d bytes of lines: the repeated members were not cut", when, compact, whole)
				}
				evs := r.after(0, 0)
				if len(evs) != want || evs[len(evs)-1][KeySeq] != int64(tc.pushes) {
					t.Fatalf("%s: after returned %d events", when, len(evs))
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

// BoundFinalOutput cuts the history's long final_outputs and fits its
// storage; the other events replay as they were, and events written after
// it (which compact the arena again) too.
func TestBoundFinalOutputKeepsTheRest(t *testing.T) {
	var log bytes.Buffer
	w := NewWriter(&log, Stamp{RunID: "r1", RuntimeID: "rt_1", Now: newFakeClock(5000).Now}, Options{History: 8})
	w.SetSessionID("ses_1")
	write := func(ev Event) {
		t.Helper()
		if _, err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		write(Event{"event": "agent.message_chunk", "i": i})
		if i%2 == 1 {
			write(Event{"event": "session.end", "stop_reason": "end_turn", "final_output": strings.Repeat("é", 5000+i)})
		}
	}
	w.BoundFinalOutput(10)
	if cap(w.history.arena) != w.history.live {
		t.Errorf("the history keeps %d bytes for %d live after BoundFinalOutput", cap(w.history.arena), w.history.live)
	}
	ends := 0
	for _, ev := range w.History(0, 0) {
		if ev.Type() != TypeSessionEnd {
			continue
		}
		ends++
		if fo, _ := ev["final_output"].(string); len([]rune(fo)) != 10 || ev["final_output_truncated"] != true {
			t.Errorf("session.end after BoundFinalOutput: final_output of %d runes, truncated %v", len([]rune(fo)), ev["final_output_truncated"])
		}
	}
	if ends != 3 {
		t.Errorf("%d session.end in the history, want 3", ends)
	}
	for i := 6; i < 40; i++ {
		write(Event{"event": "agent.message_chunk", "i": i, "pad": strings.Repeat("p", i*10)})
		if i == 8 {
			w.BoundFinalOutput(10)
		}
	}
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	h := w.History(0, 0)
	if len(h) != 8 {
		t.Fatalf("history holds %d events, want 8", len(h))
	}
	var enc lineEncoder
	for i, ev := range h {
		got, err := enc.appendLine(nil, ev)
		if err != nil {
			t.Fatal(err)
		}
		if want := lines[len(lines)-8+i] + "\n"; string(got) != want {
			t.Errorf("event %d replays as\n%s\nthe log has\n%s", i, got, want)
		}
	}
	w.Close()
}
