package event

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/sdk/jsonenc"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// writeBothWays writes the plugin event (typ, data) through Write as the
// host did before WriteFields — decoded into a map as json.Unmarshal
// decodes, "event" set, a shared session id stamped into the map — and
// through ScanFields + WriteFields, each on a Writer of its own with the
// same stamp and clock, twice (so seq moves), and fails unless the logs,
// the subscribers' events and the histories are the same. scanned reports
// whether the splice path was taken.
func writeBothWays(t *testing.T, typ sdk.EventType, data []byte, stamp Stamp, wsid, shared string) (scanned bool) {
	t.Helper()
	var want map[string]any
	decodeErr := error(nil)
	if len(data) > 0 {
		decodeErr = json.Unmarshal(data, &want)
	}
	f, ok := ScanFields(typ, data)
	if ok {
		defer f.Release()
		if decodeErr != nil {
			t.Fatalf("ScanFields took %q, which does not decode: %v", data, decodeErr)
		}
	}
	if decodeErr != nil {
		return false // dropped as malformed on either path
	}
	clock := time.UnixMilli(1700000000123)
	stamp.Now = func() time.Time { return clock }

	var oldLog, newLog bytes.Buffer
	oldW, newW := NewWriter(&oldLog, stamp, Options{}), NewWriter(&newLog, stamp, Options{})
	oldW.SetSessionID(wsid)
	newW.SetSessionID(wsid)
	oldSub, newSub := oldW.Subscribe(0), newW.Subscribe(0)
	oldItems, newItems := oldW.Subscribe(0), newW.Subscribe(0)
	defer oldSub.Close()
	defer newSub.Close()
	defer oldItems.Close()
	defer newItems.Close()
	for range 2 {
		var m map[string]any
		if len(data) > 0 {
			_ = json.Unmarshal(data, &m)
		}
		if m == nil {
			m = map[string]any{}
		}
		m[KeyEvent] = string(typ)
		if shared != "" {
			if sid, _ := m[KeySessionID].(string); sid == "" {
				m[KeySessionID] = shared
			}
		}
		oldEv, oldErr := oldW.WriteOwned(Event(m))
		var newErr error
		if ok {
			var st Stamped
			st, newErr = newW.WriteFields(f, shared)
			if oldErr == nil {
				if got := st.Event(); !reflect.DeepEqual(got, oldEv) {
					t.Fatalf("%q: Stamped.Event\n got: %#v\nwant: %#v", data, got, oldEv)
				}
				if st.Seq != oldEv[KeySeq] {
					t.Fatalf("%q: seq %d, want %v", data, st.Seq, oldEv[KeySeq])
				}
			}
		} else {
			// The caller's fallback: decode, as before.
			var m2 map[string]any
			if len(data) > 0 {
				_ = json.Unmarshal(data, &m2)
			}
			if m2 == nil {
				m2 = map[string]any{}
			}
			m2[KeyEvent] = string(typ)
			if shared != "" {
				if sid, _ := m2[KeySessionID].(string); sid == "" {
					m2[KeySessionID] = shared
				}
			}
			_, newErr = newW.WriteOwned(Event(m2))
		}
		if (oldErr != nil) != (newErr != nil) {
			t.Fatalf("%q: Write error %v, WriteFields error %v", data, oldErr, newErr)
		}
	}
	if !bytes.Equal(oldLog.Bytes(), newLog.Bytes()) {
		t.Fatalf("%q (type %q):\nWriteFields: %s\n      Write: %s", data, typ, newLog.Bytes(), oldLog.Bytes())
	}
	oldW.Close()
	newW.Close()
	oldEvs, _ := oldSub.Receive(nil)
	newEvs, _ := newSub.Receive(nil)
	if !reflect.DeepEqual(oldEvs, newEvs) {
		t.Fatalf("%q: subscribers got\nWriteFields: %#v\n      Write: %#v", data, newEvs, oldEvs)
	}
	// Items carry the log's own lines, and the same events.
	for _, c := range []struct {
		sub *Subscription
		log []byte
	}{{oldItems, oldLog.Bytes()}, {newItems, newLog.Bytes()}} {
		items, _ := c.sub.ReceiveItems(nil)
		var lines []byte
		var evs []Event
		for _, it := range items {
			lines = append(append(lines, it.Line()...), '\n')
			evs = append(evs, it.Event())
			if seq, _ := it.Seq(); seq != it.Event()[KeySeq] || it.Type() != it.Event().Type() {
				t.Fatalf("%q: item seq %d type %q, event %v", data, seq, it.Type(), it.Event())
			}
		}
		if !bytes.Equal(lines, c.log) {
			t.Fatalf("%q: item lines\n%s\nlog\n%s", data, lines, c.log)
		}
		if !reflect.DeepEqual(evs, oldEvs) {
			t.Fatalf("%q: item events %#v, want %#v", data, evs, oldEvs)
		}
	}
	if h1, h2 := oldW.History(0, 0), newW.History(0, 0); !reflect.DeepEqual(h1, h2) {
		t.Fatalf("%q: history\nWriteFields: %#v\n      Write: %#v", data, h2, h1)
	}
	if oldW.LatestSeq() != newW.LatestSeq() {
		t.Fatalf("%q: seq %d vs %d", data, newW.LatestSeq(), oldW.LatestSeq())
	}
	return ok
}

var spliceCases = []struct {
	name    string
	typ     sdk.EventType
	data    string
	scanned bool // ScanFields takes it
}{
	{"empty", "agent.message_chunk", ``, true},
	{"empty object", "x", `{}`, true},
	{"null", "x", `null`, false},
	{"chunk", "agent.message_chunk", `{"content":{"text":"a < b","type":"text"},"session_id":"s1","session_update":"agent_message_chunk"}`, false},
	{"chunk canonical", "agent.message_chunk", `{"content":{"text":"a \u003c b","type":"text"},"session_id":"s1","session_update":"agent_message_chunk"}`, true},
	{"stamped keys from the plugin", "tool.call", `{"event":"nope","run_id":null,"run_label":"mine","runtime_id":3,"seq":99,"session_id":"","ts":1.5}`, true},
	{"session_id null", "x", `{"a":1,"session_id":null}`, true},
	{"session_id number", "x", `{"session_id":5}`, true},
	{"keys around the stamps", "x", `{"":1,"a":2,"event_x":3,"run":4,"run_idz":5,"s":6,"seq0":7,"sessions":8,"tt":9,"zz":[1,{"b":2}]}`, true},
	{"unsorted", "x", `{"b":1,"a":2}`, false},
	{"duplicate", "x", `{"a":1,"a":2}`, false},
	{"spaces", "x", `{"a": 1}`, false},
	{"numbers", "x", `{"a":[0,-0,1,-12,123456789012345,1.5,1e-7,1e+21,0.000001]}`, true},
	{"numbers to normalise", "x", `{"a":1.0}`, false},
	{"big integer", "x", `{"a":12345678901234567890}`, false},
	{"exponent", "x", `{"a":1E5}`, false},
	{"out of range", "x", `{"a":1e400}`, false},
	{"escapes", "x", `{"a":"\"\\\b\f\n\r\t\u0000\u001f\u003c\u003e\u0026\u2028\u2029"}`, true},
	{"escape to normalise", "x", `{"a":"\/\u0041\u003C"}`, false},
	{"raw html", "x", `{"a":"<"}`, false},
	{"utf8", "x", `{"a":"é🐴"}`, true},
	{"invalid utf8", "x", "{\"a\":\"\xff\"}", false},
	{"escaped key", "x", `{"\u003c":1}`, false},
	{"not an object", "x", `[1]`, false},
	{"trailing", "x", `{}x`, false},
	{"truncated", "x", `{"a":`, false},
	{"html type", "a<b>&\xff", `{"z":1}`, true},
	{"deep", "x", strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70), false},
}

func TestWriteFieldsMatchesWrite(t *testing.T) {
	stamps := []struct {
		name         string
		stamp        Stamp
		wsid, shared string
	}{
		{"bare", Stamp{}, "", ""},
		{"all", Stamp{RunID: "r1", RunLabel: "l<&>", RuntimeID: "rt_1"}, "w-sid", ""},
		{"shared", Stamp{RunID: "r1"}, "", "shared-sid"},
		{"invalid utf8 stamp", Stamp{RunLabel: "\xff"}, "\xfe", ""},
	}
	for _, tc := range spliceCases {
		for _, st := range stamps {
			t.Run(tc.name+"/"+st.name, func(t *testing.T) {
				if got := writeBothWays(t, tc.typ, []byte(tc.data), st.stamp, st.wsid, st.shared); got != tc.scanned {
					t.Errorf("scanned = %v, want %v", got, tc.scanned)
				}
			})
		}
	}
}

// FuzzWriteFields: for any bytes a plugin may send as an event's fields,
// any type and any stamp, WriteFields writes the very bytes (log,
// subscribers, history) that Write writes for the decoded map, and takes
// nothing that does not decode; and the encoder's own output of any
// decoded object is taken by the scanner (the fast path is the common
// one).
func FuzzWriteFields(f *testing.F) {
	for _, tc := range spliceCases {
		f.Add(string(tc.typ), []byte(tc.data), "r1", "", "s-w", "")
	}
	f.Add("x", []byte(`{"session_id":"","ts":3}`), "", "l", "", "shared")
	f.Fuzz(func(t *testing.T, typS string, data []byte, runID, label, wsid, shared string) {
		typ := sdk.EventType(typS)
		writeBothWays(t, typ, data, Stamp{RunID: runID, RunLabel: label, RuntimeID: label + runID}, wsid, shared)
		var m map[string]any
		if json.Unmarshal(data, &m) != nil || m == nil {
			return
		}
		var e jsonenc.Encoder
		enc, err := e.AppendObject(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		if fl, ok := ScanFields(typ, enc); ok {
			fl.Release()
		} else if !strings.Contains(string(enc), `\u`) && !strings.Contains(string(enc), `\"`) && !strings.Contains(string(enc), `\\`) && depthOf(enc) <= maxScanDepth {
			// Keys with escapes and deep nesting may take the slow path;
			// nothing else should.
			t.Fatalf("the encoder's own %s was not taken", enc)
		}
		writeBothWays(t, typ, enc, Stamp{RunID: runID}, wsid, shared)
	})
}

func depthOf(b []byte) int {
	d, most := 0, 0
	for _, c := range b {
		switch c {
		case '{', '[':
			d++
			most = max(most, d)
		case '}', ']':
			d--
		}
	}
	return most
}

// TestFieldsReads: the members the host reads, decoded.
func TestFieldsReads(t *testing.T) {
	f, ok := ScanFields("agent.message_chunk", []byte(`{"content":{"a":[1,{"text":"no"}],"text":"hi\n\u003c\u2028","type":"text"},"delta":"d","session_id":"s\"1"}`))
	if !ok {
		t.Fatal("not scanned")
	}
	defer f.Release()
	if s, ok := f.ContentText(); !ok || string(s) != "hi\n<\u2028" {
		t.Errorf("ContentText = %q, %v", s, ok)
	}
	if s, ok := f.Str("session_id"); !ok || string(s) != `s"1` {
		t.Errorf("session_id = %q, %v", s, ok)
	}
	if s, ok := f.Str("delta"); !ok || string(s) != "d" {
		t.Errorf("delta = %q, %v", s, ok)
	}
	if _, ok := f.Str("content"); ok {
		t.Error("content read as a string")
	}
	if _, ok := f.Str("missing"); ok {
		t.Error("a missing member read")
	}
}

// The history keeps WriteFields' lines compact by the spans splice notes,
// and restores them byte for byte: whatever the plugin's own members
// around and instead of the stamped ones.
func TestWriteFieldsHistoryRestoresLines(t *testing.T) {
	var log bytes.Buffer
	w := NewWriter(&log, Stamp{RunID: "a1b2c3d4e5f60718", RunLabel: "b1", RuntimeID: "rt_1", Now: newFakeClock(5000).Now}, Options{})
	w.SetSessionID("ses_1")
	for _, fields := range []string{
		`{"content":{"text":"word ","type":"text"}}`,
		`{"event_extra":1,"run_mode":"x","runz":2}`,
		`{"content":{"text":"b","type":"text"},"run_mode":"x"}`,
		`{"run_id":"own","session_id":"own_ses","ts":7}`,
		`{"runtime_id":7,"session_id":null}`,
		`{"a":{"event":"nested","run_id":"a1b2c3d4e5f60718"},"z":1}`,
		``,
		`{"session_id":"ses_2"}`,
		`{"content":{"text":"c","type":"text"},"session_update":"agent_message_chunk"}`,
		`{"session_update":7,"source":"x"}`,
		`{"session_update":"tool_call"}`,
	} {
		f, ok := ScanFields(TypeMessageChunk, []byte(fields))
		if !ok {
			t.Fatalf("%s: not canonical", fields)
		}
		_, err := w.WriteFields(f, "")
		f.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	whole := 0
	for i := range w.history.n {
		e := w.history.at(i)
		if got := w.history.restore(nil, e); string(got) != lines[i] {
			t.Errorf("history line %d restores to\n%s\nthe log has\n%s", i, got, lines[i])
		}
		whole += len(lines[i])
	}
	// event, run_id, run_label and runtime_id are cut from most lines.
	if w.history.live > whole-len(lines)*40 {
		t.Errorf("the history keeps %d bytes of %d: the stamped members were not cut", w.history.live, whole)
	}
	// A string session_update is cut too, one that is not is kept.
	for i, want := range map[int]bool{8: false, 9: true, 10: false} {
		kept := bytes.Contains(w.history.compactLine(w.history.at(i)), []byte(`"session_update"`))
		if kept != want {
			t.Errorf("history line %d keeps session_update: %v, want %v (%s)", i, kept, want, w.history.compactLine(w.history.at(i)))
		}
	}
	w.Close()
}
