package event

import (
	"testing"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

func TestHostEventTypes(t *testing.T) {
	want := []sdk.EventType{
		"session.start", "session.end", "avenor.turn.start", "agent.status", "avenor.retry",
		"avenor.error", "avenor.warning", "permission.request", "permission.response",
		"subscriber.lagged", "avenor.loop.start", "avenor.phase.start", "avenor.phase.end",
		"avenor.loop.end", "avenor.team.start", "avenor.team.end", "child.question", "avenor.supervisor.reattached",
		"avenor.restarted", "avenor.watchdog", "avenor.sandbox.denied", "avenor.sandbox.widened", "avenor.rate_limit.wait", "question.request", "question.response",
		"avenor.budget.reached", "avenor.context", "avenor.context.compacted",
	}
	seen := map[sdk.EventType]bool{}
	for _, et := range HostEventTypes {
		if seen[et.Name] {
			t.Errorf("%s listed twice", et.Name)
		}
		seen[et.Name] = true
		if et.Doc == "" || len(et.Fields) == 0 {
			t.Errorf("%s lacks a doc or fields", et.Name)
		}
		if !IsHostEvent(et.Name) {
			t.Errorf("IsHostEvent(%q) = false", et.Name)
		}
	}
	for _, name := range want {
		if !seen[name] {
			t.Errorf("%s missing from HostEventTypes", name)
		}
	}
	if len(HostEventTypes) != len(want) {
		t.Errorf("HostEventTypes has %d entries, want %d", len(HostEventTypes), len(want))
	}
	for _, name := range []sdk.EventType{"agent.message_chunk", "tool.call", "avenor.native", "", "session"} {
		if IsHostEvent(name) {
			t.Errorf("IsHostEvent(%q) = true", name)
		}
	}
}

// The turn.start fields are ours to choose (docs/events.md#host-events); pin them.
func TestTurnStartFields(t *testing.T) {
	for _, et := range HostEventTypes {
		if et.Name == TypeTurnStart {
			if len(et.Fields) != 2 || et.Fields[0] != "turn" || et.Fields[1] != "prompt_length" {
				t.Fatalf("avenor.turn.start fields = %v", et.Fields)
			}
			return
		}
	}
	t.Fatal("avenor.turn.start not listed")
}

// TestEventTypeReadsBothForms: Type reads the "event" key whether it holds
// a plain string (decoded, or put there as string(...)) or an
// sdk.EventType, and "" for anything else.
func TestEventTypeReadsBothForms(t *testing.T) {
	for _, c := range []struct {
		name string
		ev   Event
		want sdk.EventType
	}{
		{"string", Event{KeyEvent: "session.end"}, sdk.EventSessionEnd},
		{"typed", Event{KeyEvent: sdk.EventToolCall}, sdk.EventToolCall},
		{"missing", Event{}, ""},
		{"not a string", Event{KeyEvent: 3}, ""},
	} {
		if got := c.ev.Type(); got != c.want {
			t.Errorf("%s: Type() = %q, want %q", c.name, got, c.want)
		}
	}
}
