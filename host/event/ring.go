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
// The lines are kept compact: the members that repeat from line to line
// (cutKeys: the event type, the stamped run_id, run_label, runtime_id and
// session_id, and the ACP session_update, ~180 of an ordinary chunk's ~285
// bytes) are cut out and kept once, in pieces; an entry records where each went, and restore
// puts them back byte for byte. A cut is exact bytes at an exact offset,
// so a line restores to itself whatever it holds.
//
// The compact lines lie back to back in one arena per ring, sized to the
// traffic: when a line does not fit, the live lines move to the front of
// the arena when that frees an eighth of it, else to a new arena of their
// size plus a quarter, so each byte is copied a bounded number of times
// (at most 7 moves in place a byte appended) and a flood allocates
// nothing; trim fits it exactly once the writer is parked or closed. A
// ring holds its lines, at most a quarter as much more while active (a
// half until 2026-12-04: 200 streaming runtimes held 1.6 MB more), and one
// entry per event (no preallocated window): a writer with few events
// holds little.
type ring struct {
	entries []ringEntry // grows to size; a circle once full
	size    int
	start   int // index of the oldest entry
	n       int
	arena   []byte
	live    int      // bytes of arena the entries refer to
	pieces  [][]byte // the members cut out of lines, by index
	hint    [len(cutKeys)]int
	// ordered: the lines lie in the arena oldest first, so a compaction
	// can move them down in place; a replaced line (boundFinalOutput)
	// breaks the order until the next compaction into a new arena.
	ordered bool
}

type ringEntry struct {
	seq    int64
	off, n int // the compact line is arena[off:off+n]
	// cuts are where pieces go back into the compact line, in order: the
	// offset in the whole line << 8 | the piece's index + 1; 0 ends them.
	cuts [len(cutKeys)]uint32
}

// cutKeys are the members cut out of kept lines, in key order (the order
// of a canonical line): each is cut when its value is a string and a comma
// follows it.
var cutKeys = [...][]byte{
	[]byte(`"event":"`), []byte(`"run_id":"`), []byte(`"run_label":"`), []byte(`"runtime_id":"`), []byte(`"session_id":"`),
	[]byte(`"session_update":"`),
}

// cutSessionUpdate is session_update's index in cutKeys: a plugin's own
// member, which splice notes too.
const cutSessionUpdate = 5

// Bounds of the ring's storage.
const (
	// minArena is the smallest arena a ring allocates: a few ordinary lines.
	minArena = 1 << 10
	// minEntries is the first entry slice a ring allocates.
	minEntries = 8
	// maxPieces bounds the distinct members a ring keeps cut out (event
	// types and sessions); a compaction drops those no line uses.
	maxPieces = 32
	// maxPieceBytes is the longest member cut out.
	maxPieceBytes = 256
	// maxCutLine: lines longer are kept whole (a cut's offset has 24 bits).
	maxCutLine = 1<<24 - 1
)

func newRing(size int) ring {
	return ring{size: size, ordered: true}
}

func (r *ring) at(i int) *ringEntry { return &r.entries[(r.start+i)%len(r.entries)] }

// compactLine is e's line as kept, its cut members missing.
func (r *ring) compactLine(e *ringEntry) []byte { return r.arena[e.off : e.off+e.n] }

// restore appends e's whole line to dst.
func (r *ring) restore(dst []byte, e *ringEntry) []byte {
	c := r.compactLine(e)
	j, removed := 0, 0
	for _, cu := range e.cuts {
		if cu == 0 {
			break
		}
		p := r.pieces[cu&0xff-1]
		at := int(cu>>8) - removed
		dst = append(dst, c[j:at]...)
		dst = append(dst, p...)
		j = at
		removed += len(p)
	}
	return append(dst, c[j:]...)
}

// cutSpans are where the members of cutKeys lie in a line, when its
// writer knows (splice): [start, end) with the comma after the member;
// end 0 for a member that is absent or not to be cut.
type cutSpans [len(cutKeys)]struct{ start, end int }

// push keeps line (no newline) as event seq, dropping the oldest event
// when the ring is full; spans, when not nil, say where the members to
// cut are, else the line is searched for them.
func (r *ring) push(seq int64, line []byte, spans *cutSpans) {
	var e *ringEntry
	switch {
	case r.n == r.size:
		e = r.at(0)
		r.release(e)
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
	r.put(e, line, spans)
}

// release empties e: a compaction copies nothing of it.
func (r *ring) release(e *ringEntry) {
	r.live -= e.n
	e.n = 0
	e.cuts = [len(cutKeys)]uint32{}
}

// put stores line as e's (e released), compacting the arena first when
// the line might not fit; spans as for push.
func (r *ring) put(e *ringEntry, line []byte, spans *cutSpans) {
	if cap(r.arena)-len(r.arena) < len(line) {
		need := r.live + len(line)
		if r.ordered && need <= cap(r.arena)*7/8 {
			r.compact(0) // in place: an eighth at least is free after it
		} else {
			r.compact(max(minArena, need+need/4))
		}
	}
	// After the compaction, which renumbers the pieces.
	e.off = len(r.arena)
	from, k := 0, 0
	if len(line) <= maxCutLine {
		for ki, key := range cutKeys {
			var i, end int
			if spans != nil {
				i, end = spans[ki].start, spans[ki].end
				if end == 0 || end-i > maxPieceBytes {
					continue
				}
			} else {
				if i = bytes.Index(line[from:], key); i < 0 {
					continue
				}
				i += from
				end = skipString(line, i+len(key)-1)
				if end >= len(line) || line[end] != ',' || end+1-i > maxPieceBytes {
					continue
				}
				end++
			}
			p := r.piece(ki, line[i:end])
			if p < 0 {
				continue
			}
			r.arena = append(r.arena, line[from:i]...)
			e.cuts[k] = uint32(i)<<8 | uint32(p+1)
			k++
			from = end
		}
	}
	r.arena = append(r.arena, line[from:]...)
	e.n = len(r.arena) - e.off
	r.live += e.n
}

// piece returns the index of the piece member (of cutKeys[key]), adding
// it when new; -1 when the pieces are full.
func (r *ring) piece(key int, member []byte) int {
	if h := r.hint[key]; h < len(r.pieces) && bytes.Equal(r.pieces[h], member) {
		return h
	}
	for i, p := range r.pieces {
		if bytes.Equal(p, member) {
			r.hint[key] = i
			return i
		}
	}
	if len(r.pieces) == maxPieces {
		return -1
	}
	r.pieces = append(r.pieces, bytes.Clone(member))
	r.hint[key] = len(r.pieces) - 1
	return len(r.pieces) - 1
}

// compact moves the live lines, oldest first, to a new arena of capacity
// size (at least r.live), or to the front of the arena when size is 0 (the
// lines must be ordered: each moves down), and keeps only the pieces they
// use. Under a flood the ring compacts in place, so it allocates nothing.
func (r *ring) compact(size int) {
	arena := r.arena[:0]
	if size > 0 {
		arena = make([]byte, 0, size)
	}
	var renum [maxPieces]uint32 // old index → new index + 1
	var pieces [][]byte
	for i := range r.n {
		e := r.at(i)
		off := len(arena)
		arena = append(arena, r.compactLine(e)...)
		e.off = off
		for k, cu := range e.cuts {
			if cu == 0 {
				break
			}
			old := cu&0xff - 1
			if renum[old] == 0 {
				pieces = append(pieces, r.pieces[old])
				renum[old] = uint32(len(pieces))
			}
			e.cuts[k] = cu&^0xff | renum[old]
		}
	}
	r.arena, r.pieces, r.hint, r.ordered = arena, pieces, [len(cutKeys)]int{}, true
}

// trim fits the arena to the live lines, for a writer that will be idle
// (parked or closed). Nothing to do when it already fits.
func (r *ring) trim() {
	if cap(r.arena) == r.live {
		return
	}
	if r.live == 0 {
		r.arena, r.pieces = nil, nil
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
	var line []byte
	for i := range count {
		e := r.at(first + i)
		line = r.restore(line[:0], e)
		ev, err := decodeLine(line)
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
// A final_output member is never cut, so the compact line shows it.
func (r *ring) boundFinalOutput(runes int, enc *lineEncoder) int {
	n := 0
	for i := range r.n {
		e := r.at(i)
		if !bytes.Contains(r.compactLine(e), finalOutputKey) {
			continue
		}
		ev, err := decodeLine(r.restore(nil, e))
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
		r.release(e)
		r.ordered = false
		r.put(e, line[:len(line)-1], nil)
		n++
	}
	return n
}

// finalOutputKey marks a line that may carry a final_output.
var finalOutputKey = []byte(`"final_output":`)
