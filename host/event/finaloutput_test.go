package event

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFinalOutput(t *testing.T) {
	chunk := func(text string) Event {
		return Event{"event": "agent.message_chunk", "content": map[string]any{"type": "text", "text": text}}
	}
	tests := []struct {
		name   string
		events []Event
		want   string
	}{
		{"nothing", nil, ""},
		{"chunks concatenate", []Event{chunk("Hel"), chunk("lo")}, "Hello"},
		{"tool call resets", []Event{chunk("let me look"), {"event": "tool.call", "title": "ls"}, chunk("Done.")}, "Done."},
		{"tool call last", []Event{chunk("x"), {"event": "tool.call"}}, ""},
		{"tool update does not reset", []Event{chunk("a"), {"event": "tool.call_update"}, chunk("b")}, "ab"},
		{"delta for non-ACP backends", []Event{{"event": "agent.message_chunk", "delta": "pi "}, {"event": "agent.message_chunk", "delta": "says"}}, "pi says"},
		{"content wins over delta", []Event{{"event": "agent.message_chunk", "content": map[string]any{"text": "c"}, "delta": "d"}}, "c"},
		{"empty content falls back to delta", []Event{{"event": "agent.message_chunk", "content": map[string]any{"text": ""}, "delta": "d"}}, "d"},
		{"typed content maps", []Event{{"event": "agent.message_chunk", "content": map[string]string{"text": "s"}}, {"event": "agent.message_chunk", "content": Event{"text": "e"}}}, "se"},
		{"thoughts ignored", []Event{{"event": "agent.thought_chunk", "content": map[string]any{"text": "hmm"}}, chunk("ok")}, "ok"},
		{"malformed chunks ignored", []Event{{"event": "agent.message_chunk", "content": "str"}, {"event": "agent.message_chunk", "content": map[string]any{"text": 3}}, chunk("ok")}, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f FinalOutput
			for _, ev := range tt.events {
				f.Observe(ev)
			}
			if got := f.Text(); got != tt.want {
				t.Fatalf("Text() = %q, want %q", got, tt.want)
			}
			f.Reset()
			if f.Text() != "" {
				t.Fatal("Reset left text")
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	long := strings.Repeat("é", FinalOutputLimit+10)
	ev := Event{"event": "session.end", "final_output": long, "stop_reason": "end_turn"}
	got := Truncate(ev, 0)
	s := got["final_output"].(string)
	if utf8.RuneCountInString(s) != FinalOutputLimit || got["final_output_truncated"] != true {
		t.Fatalf("truncated to %d runes, flag %v", utf8.RuneCountInString(s), got["final_output_truncated"])
	}
	if ev["final_output"] != long || ev["final_output_truncated"] != nil {
		t.Fatal("Truncate modified the shared event")
	}
	if got["stop_reason"] != "end_turn" {
		t.Fatal("Truncate lost a field")
	}

	short := Event{"event": "session.end", "final_output": "short"}
	if got := Truncate(short, 0); got["final_output_truncated"] != nil {
		t.Fatalf("short output flagged: %v", got)
	}
	exact := Event{"event": "session.end", "final_output": strings.Repeat("a", 5)}
	if got := Truncate(exact, 5); got["final_output_truncated"] != nil {
		t.Fatalf("output at the limit flagged: %v", got)
	}
	if got := Truncate(Event{"event": "x"}, 1); len(got) != 1 {
		t.Fatalf("event without final_output changed: %v", got)
	}
	if got := Truncate(Event{"event": "x", "final_output": 3}, 1); got["final_output"] != 3 {
		t.Fatalf("non-string final_output changed: %v", got)
	}
}

func TestTruncateRunes(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
		cut  bool
	}{
		{"", 3, "", false},
		{"abc", 3, "abc", false},
		{"abcd", 3, "abc", true},
		{"héllo", 2, "hé", true},
		{"🐴🐴🐴", 2, "🐴🐴", true},
		{"🐴🐴", 2, "🐴🐴", false},
		{"a\xffb", 2, "a\xff", true},
	}
	for _, tt := range tests {
		got, cut := TruncateRunes(tt.in, tt.n)
		if got != tt.want || cut != tt.cut {
			t.Errorf("TruncateRunes(%q, %d) = (%q, %v), want (%q, %v)", tt.in, tt.n, got, cut, tt.want, tt.cut)
		}
	}
}
