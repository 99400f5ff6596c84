package acp

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/avenor-go/avenor/sdk/runtime"
)

func TestMapUpdate(t *testing.T) {
	cases := []struct {
		name   string
		params string
		want   []runtime.EventType // event types
		known  bool
		check  func(t *testing.T, evs []runtime.Event)
	}{
		{name: "message chunk keeps every key", params: `{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text","text":"hi"},"_meta":{"x":1}}}`,
			want: []runtime.EventType{runtime.EventMessageChunk}, known: true, check: func(t *testing.T, evs []runtime.Event) {
				want := map[string]any{"session_update": "agent_message_chunk", "session_id": "s", "messageId": "m",
					"content": map[string]any{"type": "text", "text": "hi"}, "_meta": map[string]any{"x": float64(1)}}
				if !reflect.DeepEqual(evs[0].Fields, want) {
					t.Errorf("fields = %v; want %v", evs[0].Fields, want)
				}
			}},
		{name: "thought", params: `{"sessionId":"s","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hm"}}}`, want: []runtime.EventType{runtime.EventThoughtChunk}, known: true},
		{name: "user chunk", params: `{"sessionId":"s","update":{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"q"}}}`, want: []runtime.EventType{runtime.EventUserMessageChunk}, known: true},
		{name: "plan", params: `{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}`, want: []runtime.EventType{runtime.EventPlan}, known: true},
		{name: "tool call then its update", params: `{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"bash","kind":"execute","status":"pending"}}`,
			want: []runtime.EventType{runtime.EventToolCall}, known: true},
		{name: "update of an unseen tool call is announced first", params: `{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t2","title":"ls","kind":"read","status":"completed","rawOutput":"x"}}`,
			want: []runtime.EventType{runtime.EventToolCall, runtime.EventToolCallUpdate}, known: true, check: func(t *testing.T, evs []runtime.Event) {
				if evs[0].Fields["synthetic"] != true || evs[0].Fields["status"] != "pending" || evs[0].Fields["rawOutput"] != nil {
					t.Errorf("synthetic tool.call = %v", evs[0].Fields)
				}
			}},
		{name: "unknown kind is native", params: `{"sessionId":"s","update":{"sessionUpdate":"current_mode_update","currentModeId":"plan"}}`,
			want: []runtime.EventType{runtime.EventNative}, check: func(t *testing.T, evs []runtime.Event) {
				if evs[0].Fields["native_type"] != "current_mode_update" || evs[0].Fields["session_id"] != "s" {
					t.Errorf("native = %v", evs[0].Fields)
				}
			}},
	}
	m := newMapper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs, known, err := m.mapUpdate(json.RawMessage(tc.params))
			if err != nil {
				t.Fatal(err)
			}
			var types []runtime.EventType
			for _, ev := range evs {
				types = append(types, ev.Type)
			}
			if !reflect.DeepEqual(types, tc.want) || known != tc.known {
				t.Fatalf("types %v known %v; want %v %v", types, known, tc.want, tc.known)
			}
			if tc.check != nil {
				tc.check(t, evs)
			}
		})
	}
	// t1 was announced by its tool_call: its update needs no synthetic one.
	evs, _, _ := m.mapUpdate(json.RawMessage(`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}}`))
	if len(evs) != 1 || m.tool("t1") != "bash" || m.tool("t2") != "read" {
		t.Errorf("after an announced tool call: %d events, tools %q %q", len(evs), m.tool("t1"), m.tool("t2"))
	}
	if _, _, err := m.mapUpdate(json.RawMessage(`{"sessionId":"s"}`)); !errors.Is(err, errNoUpdate) {
		t.Errorf("no update object: err = %v", err)
	}
}

func TestTurnResult(t *testing.T) {
	cases := []struct {
		name   string
		result string
		stop   runtime.StopReason
		usage  *runtime.Usage
	}{
		{name: "opencode usage", result: `{"stopReason":"end_turn","usage":{"inputTokens":10,"outputTokens":5,"totalTokens":15,"cachedReadTokens":3,"thoughtTokens":1}}`,
			stop: "end_turn", usage: &runtime.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15, CachedReadTokens: 3}},
		{name: "gemini quota", result: `{"stopReason":"max_turn_requests","_meta":{"quota":{"token_count":{"input_tokens":20,"output_tokens":10}}}}`,
			stop: "max_turn_requests", usage: &runtime.Usage{InputTokens: 20, OutputTokens: 10, TotalTokens: 30}},
		{name: "cancelled", result: `{"stopReason":"cancelled"}`, stop: "cancelled"},
		{name: "empty means end_turn", result: `{}`, stop: "end_turn"},
		{name: "unknown passes", result: `{"stopReason":"paused"}`, stop: "paused"},
		{name: "case", result: `{"stopReason":"Refusal"}`, stop: "refusal"},
	}
	for _, tc := range cases {
		var r PromptResult
		if err := json.Unmarshal([]byte(tc.result), &r); err != nil {
			t.Fatal(err)
		}
		got := r.TurnResult()
		if got.StopReason != tc.stop || !reflect.DeepEqual(got.Usage, tc.usage) {
			t.Errorf("%s: got %q %+v; want %q %+v", tc.name, got.StopReason, got.Usage, tc.stop, tc.usage)
		}
	}
}

func TestPermissionAnswer(t *testing.T) {
	offers := []PermissionOffer{{OptionID: "proceed_always", Kind: "allow_always"}, {OptionID: "proceed_once", Kind: "allow_once"}, {OptionID: "cancel", Kind: "reject_once"}}
	cases := []struct {
		name string
		d    runtime.PermissionDecision
		err  error
		want string
	}{
		{name: "selected id", d: runtime.PermissionDecision{Outcome: "selected", OptionID: "proceed_once"}, want: `{"outcome":{"outcome":"selected","optionId":"proceed_once"}}`},
		{name: "reject is an option, not cancelled", d: runtime.PermissionDecision{Outcome: "selected", OptionID: "cancel", Kind: runtime.KindReject}, want: `{"outcome":{"outcome":"selected","optionId":"cancel"}}`},
		{name: "by kind", d: runtime.PermissionDecision{Outcome: "selected", Kind: runtime.KindAllowOnce}, want: `{"outcome":{"outcome":"selected","optionId":"proceed_once"}}`},
		{name: "by kind, none offered", d: runtime.PermissionDecision{Outcome: "selected", Kind: "nope"}, want: `{"outcome":{"outcome":"cancelled"}}`},
		{name: "cancelled", d: runtime.PermissionDecision{Outcome: "cancelled"}, want: `{"outcome":{"outcome":"cancelled"}}`},
		{name: "error never allows", d: runtime.PermissionDecision{Outcome: "selected", OptionID: "proceed_once"}, err: errors.New("broker failed"), want: `{"outcome":{"outcome":"cancelled"}}`},
	}
	for _, tc := range cases {
		b, _ := json.Marshal(permissionAnswer(offers, tc.d, tc.err))
		if string(b) != tc.want {
			t.Errorf("%s: %s; want %s", tc.name, b, tc.want)
		}
	}
}

func TestConfigOptionValues(t *testing.T) {
	var o ConfigOption
	_ = json.Unmarshal([]byte(`{"id":"model","currentValue":"auto","options":[{"value":"auto"},{"group":"g","name":"G","options":[{"value":"a/b"},{"value":"c"}]}]}`), &o)
	if got := o.Values(); !reflect.DeepEqual(got, []string{"auto", "a/b", "c"}) || o.Current() != "auto" {
		t.Errorf("values %v current %q", got, o.Current())
	}
	opts := []ConfigOption{{ID: "x", Category: "model"}, {ID: "mode"}}
	if findOption(opts, "model").ID != "x" || findOption(opts, "mode").ID != "mode" || findOption(opts, "thought_level") != nil {
		t.Error("findOption")
	}
}
