package plugin

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

func eventsMessage(evs ...*pb.Event) []byte {
	b, err := proto.Marshal(&pb.PluginMessage{Msg: &pb.PluginMessage_Events{Events: &pb.Events{Events: evs}}})
	if err != nil {
		panic(err)
	}
	return b
}

// TestWireEvents: an Events batch is read without decoding it into
// messages, the same as the proto decoder reads it; any other message, or
// one the decoder would read differently, is left to the decoder.
func TestWireEvents(t *testing.T) {
	chunk := &pb.Event{Type: "agent.message_chunk", Json: []byte(`{"content":{"text":"hi","type":"text"}}`)}
	// An Event with its type twice and an unknown field: the last type
	// counts, the unknown field is skipped.
	twice := protowire.AppendTag(nil, eventType, protowire.BytesType)
	twice = protowire.AppendString(twice, "first")
	twice = protowire.AppendTag(twice, 9, protowire.VarintType)
	twice = protowire.AppendVarint(twice, 7)
	twice = protowire.AppendTag(twice, eventType, protowire.BytesType)
	twice = protowire.AppendString(twice, "agent.status")
	oddEvents := protowire.AppendTag(nil, eventsEvents, protowire.BytesType)
	oddEvents = protowire.AppendBytes(oddEvents, twice)
	odd := protowire.AppendTag(nil, pluginMessageEvents, protowire.BytesType)
	odd = protowire.AppendBytes(odd, oddEvents)
	badType := eventsMessage(&pb.Event{Type: "x"})
	badType[bytes.IndexByte(badType, 'x')] = 0xff
	for _, tc := range []struct {
		name   string
		msg    []byte
		ok     bool
		wantTy []runtime.EventType
	}{
		{"one event", eventsMessage(chunk), true, []runtime.EventType{"agent.message_chunk"}},
		{"three events", eventsMessage(chunk, &pb.Event{Type: "agent.status"}, chunk), true,
			[]runtime.EventType{"agent.message_chunk", "agent.status", "agent.message_chunk"}},
		{"empty batch", eventsMessage(), true, nil},
		{"a field twice, an unknown one", odd, true, []runtime.EventType{"agent.status"}},
		{"not events", mustMarshal(&pb.PluginMessage{Msg: &pb.PluginMessage_TurnEnded{TurnEnded: &pb.TurnEnded{TurnId: "t"}}}), false, nil},
		{"type not UTF-8", badType, false, nil},
		{"truncated", eventsMessage(chunk)[:10], false, nil},
		{"nothing", nil, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := wireEvents(tc.msg, nil, map[string]runtime.EventType{})
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if len(got) != len(tc.wantTy) {
				t.Fatalf("%d events, want %d", len(got), len(tc.wantTy))
			}
			for i, ev := range got {
				if ev.typ != tc.wantTy[i] {
					t.Errorf("event %d type %q, want %q", i, ev.typ, tc.wantTy[i])
				}
			}
			checkSameAsDecoder(t, tc.msg, got)
		})
	}
}

// TestWireEventsInterns: a type name seen again is the same string, and
// the names kept stay bounded.
func TestWireEventsInterns(t *testing.T) {
	names := map[string]runtime.EventType{}
	for i := range maxInternedTypes + 10 {
		if _, ok := wireEvents(eventsMessage(&pb.Event{Type: "t" + string(rune('a'+i%26)) + string(rune('a'+i/26))}), nil, names); !ok {
			t.Fatal("not read")
		}
	}
	if len(names) != maxInternedTypes {
		t.Errorf("%d names kept, want %d", len(names), maxInternedTypes)
	}
}

func mustMarshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// checkSameAsDecoder fails unless the proto decoder reads msg as an Events
// batch of the same events.
func checkSameAsDecoder(t *testing.T, msg []byte, got []wireEvent) {
	t.Helper()
	var pm pb.PluginMessage
	if err := proto.Unmarshal(msg, &pm); err != nil {
		t.Fatalf("wireEvents read what the decoder refuses (%v)", err)
	}
	evs, ok := pm.Msg.(*pb.PluginMessage_Events)
	if !ok {
		t.Fatalf("wireEvents read a %T as events", pm.Msg)
	}
	want := evs.Events.GetEvents()
	if len(want) != len(got) {
		t.Fatalf("%d events, the decoder %d", len(got), len(want))
	}
	for i := range want {
		if string(got[i].typ) != want[i].GetType() || !bytes.Equal(got[i].json, want[i].GetJson()) {
			t.Fatalf("event %d is %q %q, the decoder's %q %q", i, got[i].typ, got[i].json, want[i].GetType(), want[i].GetJson())
		}
	}
}

// FuzzWireEvents: whatever bytes a plugin sends, what wireEvents reads is
// what the proto decoder reads.
func FuzzWireEvents(f *testing.F) {
	f.Add(eventsMessage(&pb.Event{Type: "agent.message_chunk", Json: []byte(`{"a":1}`)}))
	f.Add(eventsMessage())
	f.Add(mustMarshal(&pb.PluginMessage{Msg: &pb.PluginMessage_Closed{Closed: &pb.Closed{}}}))
	f.Fuzz(func(t *testing.T, msg []byte) {
		got, ok := wireEvents(msg, nil, map[string]runtime.EventType{})
		if ok {
			checkSameAsDecoder(t, msg, got)
		}
	})
}
