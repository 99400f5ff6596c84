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
//
// The lines lie back to back in one arena per ring, sized to the traffic:
// when a line does not fit, the live lines move to a new arena of their
// size plus a quarter (so each byte is copied a bounded number of times),
// and trim fits it exactly once the writer goes idle. Bytes once written
// to an arena never change — a new line goes past the end, a compaction
// writes a new arena — so a kept line can be shared with the subscribers
// and outlive its entry. An idle ring holds its lines, at most a quarter
// more, and one entry per event (no preallocated window): a writer with
// few events holds little.
type ring struct {
	entries []ringEntry // grows to size; a circle once full
	size    int
	start   int // index of the oldest entry
	n       int
	arena   []byte
	live    int // bytes of arena the entries refer to
}

type ringEntry struct {
	seq    int64
	off, n int // the line (no newline) is arena[off:off+n]
}

// Growth of the ring's storage.
const (
	// minArena is the smallest arena a ring allocates: a few ordinary lines.
	minArena = 1 << 10
	// minEntries is the first entry slice a ring allocates.
	minEntries = 8
)

func newRing(size int) ring {
	return ring{size: size}
}

func (r *ring) at(i int) *ringEntry { return &r.entries[(r.start+i)%len(r.entries)] }

func (r *ring) line(e *ringEntry) []byte { return r.arena[e.off : e.off+e.n : e.off+e.n] }

// push copies line (no newline) in as event seq, dropping the oldest
// event when the ring is full, and returns the kept copy: shared with the
// subscribers, read-only.
func (r *ring) push(seq int64, line []byte) []byte {
	var e *ringEntry
	switch {
	case r.n == r.size:
		e = r.at(0)
		r.live -= e.n
		e.n = 0 // not copied by a compaction below
		r.start = (r.start + 1) % len(r.entries)
	default:
		if r.n == cap(r.entries) {
			// Not full yet, so the entries are in order from 0.
			grown := make([]ringEntry, r.n, min(r.size, max(minEntries, 2*r.n)))
			copy(grown, r.entries)
			r.entries = grown
		}
		r.entries = r.entries[:r.n+1]
		e = &r.entries[r.n]
		r.n++
	}
	e.seq = seq
	e.off, e.n = r.store(line)
	return r.line(e)
}

// store appends line to the arena, compacting first when it does not fit,
// and returns where it lies.
func (r *ring) store(line []byte) (off, n int) {
	if cap(r.arena)-len(r.arena) < len(line) {
		need := r.live + len(line)
		r.compact(max(minArena, need+need/4))
	}
	off = len(r.arena)
	r.arena = append(r.arena, line...)
	r.live += len(line)
	return off, len(line)
}

// compact moves the live lines, oldest first, to a new arena of capacity
// size (at least r.live). The old arena is left as it is: a subscriber
// may still hold lines of it.
func (r *ring) compact(size int) {
	arena := make([]byte, 0, size)
	for i := range r.n {
		e := r.at(i)
		off := len(arena)
		arena = append(arena, r.line(e)...)
		e.off = off
	}
	r.arena = arena
}

// trim fits the arena to the live lines, for a writer that will be idle
// (parked or closed). Nothing to do when it already fits.
func (r *ring) trim() {
	if cap(r.arena) == r.live {
		return
	}
	if r.live == 0 {
		r.arena = nil
		return
	}
	r.compact(r.live)
}

// after returns up to limit (all when limit <= 0) of the newest entries with
// seq > afterSeq, oldest first.
func (r *ring) after(afterSeq int64, limit int) []Event {
	count := 0
	// Seqs increase from oldest to newest, so walk back from the newest
	// until the cursor or the limit is reached.
	for i := r.n - 1; i >= 0; i-- {
		if r.at(i).seq <= afterSeq || (limit > 0 && count == limit) {
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
		e := r.at(first + i)
		ev, err := decodeLine(r.line(e))
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
// The old line's bytes stay in the arena until the next compaction (trim).
func (r *ring) boundFinalOutput(runes int, enc *lineEncoder) int {
	n := 0
	for i := range r.n {
		e := r.at(i)
		if !bytes.Contains(r.line(e), finalOutputKey) {
			continue
		}
		ev, err := decodeLine(r.line(e))
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
		r.live -= e.n
		e.n = 0 // not copied if store compacts
		e.off, e.n = r.store(line[:len(line)-1])
		n++
	}
	return n
}

// finalOutputKey marks a line that may carry a final_output.
var finalOutputKey = []byte(`"final_output":`)
