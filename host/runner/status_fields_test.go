package runner

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// The status tracker reads plugin events scanned (beforeFields,
// afterFields) exactly as it reads them decoded (before, after): the same
// synthesised agent.status events, the same snapshot.
func TestStatusFromFieldsMatchesMaps(t *testing.T) {
	tests := []struct {
		name string
		typ  sdk.EventType
		data string
	}{
		{"plain chunk", "agent.message_chunk", `{"content":{"text":"hello","type":"text"},"session_id":"s1"}`},
		{"chunk with a marker", "agent.message_chunk", `{"content":{"text":"[status: working | tests]","type":"text"}}`},
		{"marker in delta", "agent.message_chunk", `{"delta":"\u003c|status: waiting | you|\u003e"}`},
		{"marker upper case", "agent.message_chunk", `{"content":{"text":"[STATUS: done]"}}`},
		{"content without text", "agent.message_chunk", `{"content":{"type":"image"},"delta":"[status: thinking]"}`},
		{"empty text over delta", "agent.message_chunk", `{"content":{"text":""},"delta":"[status: done]"}`},
		{"thought", "agent.thought_chunk", `{"content":{"text":"hmm"}}`},
		{"tool call", "tool.call", `{"kind":"bash","title":"run \u0026 see","toolCallId":"c1"}`},
		{"tool call no title", "tool.call", `{"title":5}`},
		{"permission request", "permission.request", `{"question":"ok?","request_id":"r1","tool":"bash"}`},
		{"permission response", "permission.response", `{"request_id":"r1"}`},
		{"session end", "session.end", `{"stop_reason":"end_turn"}`},
		{"own session id number", "x", `{"session_id":7}`},
		{"other", "avenor.native", `{"payload":{"a":1}}`},
	}
	now := func() time.Time { return time.UnixMilli(1700000000000) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldT := newStatusTracker("r", "", 0, now)
			newT := newStatusTracker("r", "", 0, now)
			// Start both in a phase a thought chunk changes.
			oldT.st.Phase, newT.st.Phase = PhaseWorking, PhaseWorking
			var m map[string]any
			if err := json.Unmarshal([]byte(tt.data), &m); err != nil {
				t.Fatal(err)
			}
			m["event"] = string(tt.typ)
			f, ok := event.ScanFields(tt.typ, []byte(tt.data))
			if !ok {
				t.Fatalf("%s: not canonical", tt.data)
			}
			defer f.Release()
			want := oldT.before(event.Event(m))
			got := newT.beforeFields(f)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("before:\n got: %v\nwant: %v", got, want)
			}
			var log1, log2 jsonLog
			w1 := event.NewWriter(&log1, event.Stamp{Now: now}, event.Options{})
			w2 := event.NewWriter(&log2, event.Stamp{Now: now}, event.Options{})
			w1.SetSessionID("w")
			w2.SetSessionID("w")
			stamped, err := w1.WriteOwned(event.Event(m))
			if err != nil {
				t.Fatal(err)
			}
			st, err := w2.WriteFields(f, "")
			if err != nil {
				t.Fatal(err)
			}
			oldT.after(stamped)
			newT.afterFields(f, st)
			if a, b := oldT.snapshot(), newT.snapshot(); !reflect.DeepEqual(a, b) {
				t.Fatalf("snapshot:\n got: %+v\nwant: %+v", b, a)
			}
		})
	}
}

type jsonLog struct{ b []byte }

func (l *jsonLog) Write(p []byte) (int, error) { l.b = append(l.b, p...); return len(p), nil }

// mayHoldMarker never misses text that ParseStatusMarkers finds a marker
// in.
func FuzzMayHoldMarker(f *testing.F) {
	for _, s := range []string{"[status: done]", "<|STATUS: working|>", "status", "ſtatus:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(ParseStatusMarkers(s)) > 0 && !mayHoldMarker([]byte(s)) {
			t.Fatalf("%q holds a marker", s)
		}
	})
}
