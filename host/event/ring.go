package event

// ring keeps the latest events in seq order. It is guarded by Writer.mu.
type ring struct {
	entries []ringEntry
	start   int // index of the oldest entry
	n       int
}

type ringEntry struct {
	seq int64
	ev  Event
}

func newRing(size int) ring {
	return ring{entries: make([]ringEntry, size)}
}

func (r *ring) push(seq int64, ev Event) {
	size := len(r.entries)
	if r.n < size {
		r.entries[(r.start+r.n)%size] = ringEntry{seq, ev}
		r.n++
		return
	}
	r.entries[r.start] = ringEntry{seq, ev}
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
	out := make([]Event, count)
	first := r.n - count
	for i := range count {
		out[i] = r.entries[(r.start+first+i)%size].ev
	}
	return out
}
