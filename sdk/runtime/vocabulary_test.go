package runtime

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// TestVocabularyIsTyped: StopReason, EventType, Capability and Support are
// defined types, distinct from string and from each other, so the compiler
// refuses one where another is meant; String gives the contract's
// spelling.
func TestVocabularyIsTyped(t *testing.T) {
	cases := []struct {
		name  string
		value fmt.Stringer
		want  string
	}{
		{"stop reason", StopEndTurn, "end_turn"},
		{"stop reason", StopCancelledForced, "cancelled_forced"},
		{"event type", EventSessionEnd, "session.end"},
		{"event type", EventToolCallUpdate, "tool.call_update"},
		{"capability", CapPermissionRelay, "permission_relay"},
		{"support", Experimental, "experimental"},
	}
	str := reflect.TypeFor[string]()
	for _, c := range cases {
		typ := reflect.TypeOf(c.value)
		if typ == str || typ.Kind() != reflect.String {
			t.Errorf("%s: %v is a %v, want a defined string type", c.name, c.value, typ)
		}
		if got := c.value.String(); got != c.want {
			t.Errorf("%s: String() = %q, want %q", c.name, got, c.want)
		}
	}
	types := map[reflect.Type]bool{}
	for _, v := range []any{StopError, EventError, CapCancel, Supported} {
		types[reflect.TypeOf(v)] = true
	}
	if len(types) != 4 {
		t.Errorf("the four vocabularies share types: %v", types)
	}
}

// TestVocabularyJSONIsAString: a defined type marshals and unmarshals
// exactly as the string it holds, so the event log, `avenor backends
// --json` and every control answer keep their bytes.
func TestVocabularyJSONIsAString(t *testing.T) {
	typed := struct {
		Stop   StopReason                 `json:"stop_reason"`
		Event  EventType                  `json:"event"`
		Caps   map[Capability]Support     `json:"capabilities"`
		Events []EventType                `json:"event_types"`
		Table  CapabilityTable            `json:"table"`
		ByType map[EventType][]StopReason `json:"by_type"`
	}{
		StopMaxTokens, EventPlan, Supports(CapResume, CapPrompt).With(CapPrewarm, Unverified),
		[]EventType{EventMessageChunk, "mybackend.extra"}, CapabilityTable{CapCancel: Supported},
		map[EventType][]StopReason{EventSessionEnd: {StopEndTurn, StopRefusal}},
	}
	plain := struct {
		Stop   string              `json:"stop_reason"`
		Event  string              `json:"event"`
		Caps   map[string]string   `json:"capabilities"`
		Events []string            `json:"event_types"`
		Table  map[string]string   `json:"table"`
		ByType map[string][]string `json:"by_type"`
	}{
		"max_tokens", "session.plan", map[string]string{"resume": "supported", "prompt": "supported", "prewarm": "unverified"},
		[]string{"agent.message_chunk", "mybackend.extra"}, map[string]string{"cancel": "supported"},
		map[string][]string{"session.end": {"end_turn", "refusal"}},
	}
	got, err := json.Marshal(typed)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(plain)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("typed JSON\n%s\nwant the plain strings'\n%s", got, want)
	}
	back := typed
	back.Caps, back.ByType = nil, nil
	if err := json.Unmarshal(want, &back); err != nil || !reflect.DeepEqual(back, typed) {
		t.Fatalf("decoding the plain JSON gives %+v, %v; want %+v", back, err, typed)
	}
}
