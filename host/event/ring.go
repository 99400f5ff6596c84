package event

import (
	"bytes"
	"encoding/json"
)

// ring keeps the latest events in seq order. It is guarded by Writer.mu.
//
// It holds each event as its encoded NDJSON line, not as the map: a line is
// about a third of the map's memory, and `avenor stable` keeps a ring per
// runtime (at 200 runtimes the maps were half the supervisor's live heap,
// measured 2026-11-29). Replays are rare and short, so decoding them on demand costs
// little. Decoding keeps other numbers as json.Number, so a replayed event
// encodes to the very bytes of its line.
type ring struct {
	entries []ringEntry
	start   int // index of the oldest entry
	n       int
}

type ringEntry struct {
	seq  int64
	line []byte // the event's NDJSON line, without the newline
}

func newRing(size int) ring {
	return ring{entries: make([]ringEntry, size)}
}

// pushOwned keeps line, which the caller hands over (no newline): the
// Writer's kept copy, shared with the subscribers, which nobody changes.
func (r *ring) pushOwned(seq int64, line []byte) {
	size := len(r.entries)
	if r.n < size {
		r.entries[(r.start+r.n)%size] = ringEntry{seq, line}
		r.n++
		return
	}
	r.entries[r.start] = ringEntry{seq, line}
	r.start = (r.start + 1) % size
}

// after returns up to limit (all when limit <= 0) of the newest entries with
// seq > afterSeq, oldest first.
func (r *ring) after(afterSeq int64, limit int) []Event {
	size := len(r.entries)
	count := 0
	// Seqs increase from oldest to newest, so walk back from the newest
	// until the cursor or the limit is reached.
	for i := r.n - 1; i >= 0; i-- {
		if r.entries[(r.start+i)%size].seq <= afterSeq || (limit > 0 && count == limit) {
			break
		}
		count++
	}
	if count == 0 {
		return nil
	}
	out := make([]Event, 0, count)
	first := r.n - count
	for i := range count {
		e := r.entries[(r.start+first+i)%size]
		ev, err := decodeLine(e.line)
		if err != nil {
			// Cannot happen: the line is the writer's own encoding. Keep
			// the seq visible rather than dropping the entry silently.
			ev = Event{KeyEvent: string(TypeError), KeySeq: e.seq, "message": "history entry unreadable: " + err.Error()}
		}
		// The stamped fields get the Go types a live event has (seq and
		// ts int64), so readers treat replayed and live events alike.
		ev[KeySeq] = e.seq
		if ts, ok := ev[KeyTS].(json.Number); ok {
			if v, err := ts.Int64(); err == nil {
				ev[KeyTS] = v
			}
		}
		out = append(out, ev)
	}
	return out
}

// decodeLine decodes one of the writer's own lines; numbers stay json.Number
// so that re-encoding gives the same bytes.
func decodeLine(line []byte) (Event, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var ev Event
	if err := dec.Decode(&ev); err != nil {
		return nil, err
	}
	return ev, nil
}

// boundFinalOutput re-encodes, with enc, every line whose final_output is
// longer than runes runes as Truncate makes its event (final_output cut,
// final_output_truncated true), and returns how many it rewrote. Lines are
// only replaced, never changed: a subscriber may still hold the old one.
func (r *ring) boundFinalOutput(runes int, enc *lineEncoder) int {
	size := len(r.entries)
	n := 0
	for i := range r.n {
		e := &r.entries[(r.start+i)%size]
		if !bytes.Contains(e.line, finalOutputKey) {
			continue
		}
		ev, err := decodeLine(e.line)
		if err != nil {
			continue
		}
		if s, _ := ev["final_output"].(string); len(s) <= runes {
			continue // short enough (n bytes are at most n runes)
		} else if _, long := TruncateRunes(s, runes); !long {
			continue
		}
		line, err := enc.appendLine(nil, Truncate(ev, runes))
		if err != nil {
			continue
		}
		e.line = line[:len(line)-1]
		n++
	}
	return n
}

// finalOutputKey marks a line that may carry a final_output.
var finalOutputKey = []byte(`"final_output":`)
