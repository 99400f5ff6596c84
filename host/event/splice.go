package event

import (
	"strconv"

	"github.com/avenor-go/avenor/sdk/jsonenc"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Stamped describes a plugin event WriteFields published.
type Stamped struct {
	// Seq is the event's seq.
	Seq int64
	// SessionID is the session_id the Writer stamped into it ("" when it
	// kept the event's own or stamped none).
	SessionID string
	// Line is the event's NDJSON line without the newline. It is shared
	// with the history ring and the subscribers: read-only.
	Line []byte

	raw rawDesc // what Event needs
}

// Event returns the event as Write would have returned it: the decoded
// line, with the stamped fields' Go values. It decodes the line at every
// call; the hot path has no use for it.
func (s *Stamped) Event() Event {
	return s.raw.newRaw().event()
}

// WriteFields is Write for a plugin event that arrived as its JSON bytes
// and was scanned (ScanFields): it stamps the line by splicing the stamped
// members into the plugin's bytes, and publishes that one encoding — to
// the log, the history ring and, decoded only when a subscriber reads it,
// to the subscribers. The line is byte for byte what Write writes for the
// decoded fields with "event" set to f.Type(); the stamping is Write's.
//
// sessionID, when not empty, is the session_id of an event whose own is
// not a non-empty string (a shared writer's current session, which
// host/runner stamped into the map before); else the Writer's rules apply.
// f stays the caller's.
func (w *Writer) WriteFields(f *Fields, sessionID string) (Stamped, error) {
	typ := f.Type()
	if typ == "" {
		return Stamped{}, ErrNoType
	}
	if w.batch != nil {
		w.batch.waitRoom()
	}
	// What the plugin's fields say about the stamped keys, read before the
	// lock.
	own := f.value(KeySessionID)
	ownSID := len(own) > 2 && own[0] == '"' // a non-empty string
	if sessionID != "" && !ownSID {
		own = nil // replaced below
	} else if string(own) == "null" || string(own) == `""` {
		own = nil // dropped, as Write drops it
	}
	hasTS := f.value(KeyTS) != nil

	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return Stamped{}, ErrClosed
	}
	stampSID := ""
	if own == nil {
		stampSID = sessionID
		if stampSID == "" {
			stampSID = w.sessionID
		}
	}
	seq := w.seq + 1
	var spans cutSpans
	line := w.splice(w.line[:0], f, spliceStamp{
		typ: typ, seq: seq, hasTS: hasTS, ownSID: own, sessionID: stampSID,
	}, &spans)
	kept, offset := w.commitLocked(seq, line, &spans)
	out := Stamped{Seq: seq, SessionID: stampSID, Line: kept,
		raw: rawDesc{line: kept, seq: seq, typ: typ, stamp: &w.stamp, sessionID: stampSID, stampedTS: !hasTS}}
	if w.stamp.RunID != "" && f.value(KeyRunID) == nil {
		out.raw.stamped |= stampedRunID
	}
	if w.stamp.RunLabel != "" && f.value(KeyRunLabel) == nil {
		out.raw.stamped |= stampedRunLabel
	}
	if w.stamp.RuntimeID != "" && f.value(KeyRuntimeID) == nil {
		out.raw.stamped |= stampedRuntimeID
	}
	if len(w.subs) > 0 {
		r := out.raw.newRaw()
		for s := range w.subs {
			s.pushRaw(seq, r)
		}
	}
	w.mu.Unlock()
	return out, w.settle(typ, seq, offset)
}

type spliceStamp struct {
	typ       sdk.EventType
	seq       int64
	hasTS     bool
	ownSID    []byte // the event's own session_id value to keep, or nil
	sessionID string // the session_id to stamp when ownSID is nil
}

// sessionUpdateKey is the plugin member splice notes for the history
// besides the stamped ones (cutSessionUpdate).
const sessionUpdateKey = "session_update"

// stampKeys are the keys Write stamps, in key order.
var stampKeys = [...]string{KeyEvent, KeyRunID, KeyRunLabel, KeyRuntimeID, KeySeq, KeySessionID, KeyTS}

// stampKeyBytes holds stampKeys as bytes, for the splice.
var stampKeyBytes = func() (b [len(stampKeys)][]byte) {
	for i, k := range stampKeys {
		b[i] = []byte(k)
	}
	return b
}()

// splice appends the stamped line, newline included: f's members and the
// stamped ones merged in key order (f's are sorted, being canonical), and
// notes in spans where the stamped string members of cutKeys went, for
// the history. It runs under w.mu (seq, ts and the scratch are the
// Writer's).
func (w *Writer) splice(dst []byte, f *Fields, st spliceStamp, spans *cutSpans) []byte {
	dst = append(dst, '{')
	first := true
	// open is the member whose span ends at the next comma: its index in
	// cutKeys, or -1.
	open := -1
	key := func(k []byte) {
		if !first {
			dst = append(dst, ',')
			if open >= 0 {
				spans[open].end = len(dst)
				open = -1
			}
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, k...)
		dst = append(dst, '"', ':')
	}
	// str writes a stamped string member; cut is its index in cutKeys
	// (its span is noted), or -1.
	str := func(k []byte, v string, cut int) {
		if v != "" {
			key(k)
			if cut >= 0 {
				spans[cut].start = len(dst) - len(k) - 3 // the key's quotes and colon
				open = cut
			}
			dst = jsonenc.AppendString(dst, v)
		}
	}
	// stamp writes stamped key k; m is the plugin's member of that key,
	// or nil. event and seq are always the Writer's; session_id is as
	// st says; ts, run_id, run_label and runtime_id are the plugin's own
	// when it has them (Write stamps them only when absent).
	stamp := func(i int, m *member) {
		k, kb := stampKeys[i], stampKeyBytes[i]
		switch {
		case k == KeyEvent:
			str(kb, string(st.typ), 0)
		case k == KeySeq:
			key(kb)
			dst = strconv.AppendInt(dst, st.seq, 10)
		case k == KeySessionID:
			if st.ownSID != nil {
				key(kb)
				dst = append(dst, st.ownSID...)
			} else {
				str(kb, st.sessionID, 4)
			}
		case m != nil:
			key(f.key(*m))
			dst = append(dst, f.val(*m)...)
		case k == KeyTS:
			key(kb)
			dst = strconv.AppendInt(dst, w.now().UnixMilli(), 10)
		case k == KeyRunID:
			str(kb, w.stamp.RunID, 1)
		case k == KeyRunLabel:
			str(kb, w.stamp.RunLabel, 2)
		case k == KeyRuntimeID:
			str(kb, w.stamp.RuntimeID, 3)
		}
	}
	si := 0
	for i := range f.members {
		m := &f.members[i]
		for si < len(stampKeys) && stampKeys[si] < string(f.key(*m)) {
			stamp(si, nil)
			si++
		}
		if si < len(stampKeys) && stampKeys[si] == string(f.key(*m)) {
			stamp(si, m)
			si++
			continue
		}
		k, v := f.key(*m), f.val(*m)
		key(k)
		if len(v) > 0 && v[0] == '"' && string(k) == sessionUpdateKey {
			spans[cutSessionUpdate].start = len(dst) - len(k) - 3
			open = cutSessionUpdate
		}
		dst = append(dst, v...)
	}
	for ; si < len(stampKeys); si++ {
		stamp(si, nil)
	}
	return append(dst, '}', '\n')
}
