package loop

import (
	"reflect"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/host/event"
)

func TestParseMarker(t *testing.T) {
	for _, c := range []struct {
		line string
		want Marker
		ok   bool
	}{
		{"[loop: exit]", Marker{Exit, ""}, true},
		{"[loop: exit | tests green]", Marker{Exit, "tests green"}, true},
		{"  [LOOP:  Exit |   tests green   ]  ", Marker{Exit, "tests green"}, true},
		{"[loop: continue]", Marker{Continue, ""}, true},
		{"[loop: abort | architectural issue: layering violation in pkg/db]", Marker{Abort, "architectural issue: layering violation in pkg/db"}, true},
		{"<|workflow: exit | tests green|>", Marker{Exit, "tests green"}, true},
		{"<|workflow: abort | reason|>", Marker{Abort, "reason"}, true},
		{"<|Workflow:ABORT|>", Marker{Abort, ""}, true},
		{"\t<|workflow: exit |  a | b |>\t", Marker{Exit, "a | b"}, true},
		{"<|workflow: continue|>", Marker{Continue, ""}, true},
		// Not markers: unknown directives, prose, inline code, partial lines.
		{"[loop: stop]", Marker{}, false},
		{"<|workflow: gate | x|>", Marker{}, false},
		{"I will emit [loop: exit] when done", Marker{}, false},
		{"`[loop: exit]`", Marker{}, false},
		{"Use `<|workflow: abort | x|>` to stop.", Marker{}, false},
		{"[loop: exit] and more", Marker{}, false},
		{"- [loop: exit]", Marker{}, false},
		{"[loop exit]", Marker{}, false},
		{"<|status: working | tests|>", Marker{}, false},
		{"", Marker{}, false},
	} {
		got, ok := ParseMarker(c.line)
		if ok != c.ok || got != c.want {
			t.Errorf("ParseMarker(%q) = %+v, %v; want %+v, %v", c.line, got, ok, c.want, c.ok)
		}
	}
}

func TestParseSkip(t *testing.T) {
	for _, c := range []struct {
		line, name string
		ok         bool
	}{
		{"<|team: skip | auth-review|>", "auth-review", true},
		{"  <|TEAM:skip|Auth-Review  |>  ", "Auth-Review", true},
		{"<|team: skip |  |>", "", false},
		{"skip <|team: skip | a|>", "", false},
		{"<|team: keep | a|>", "", false},
	} {
		name, ok := ParseSkip(c.line)
		if ok != c.ok || name != c.name {
			t.Errorf("ParseSkip(%q) = %q, %v; want %q, %v", c.line, name, ok, c.name, c.ok)
		}
	}
}

func msg(text string) event.Event {
	return event.Event{"event": "agent.message_chunk", "content": map[string]any{"type": "text", "text": text}}
}

func thought(text string) event.Event {
	return event.Event{"event": "agent.thought_chunk", "content": map[string]any{"type": "text", "text": text}}
}

func TestScanner(t *testing.T) {
	tool := event.Event{"event": "tool.call", "toolCallId": "t1", "title": "run", "kind": "bash", "status": "pending"}
	toolOut := event.Event{"event": "tool.call_update", "toolCallId": "t1", "status": "completed",
		"content": map[string]any{"text": "[loop: abort | from a tool]\n"}}
	for _, c := range []struct {
		name  string
		evs   []event.Event
		want  Marker
		skips []string
	}{
		{"none", []event.Event{msg("all good\n")}, Marker{}, nil},
		{"whole line", []event.Event{msg("done.\n[loop: exit | green]\n")}, Marker{Exit, "green"}, nil},
		{"last line without newline", []event.Event{msg("done.\n[loop: exit]")}, Marker{Exit, ""}, nil},
		{"split across chunks", []event.Event{msg("ok\n[lo"), msg("op: ab"), msg("ort | stuck]"), msg("\nbye\n")}, Marker{Abort, "stuck"}, nil},
		{"canonical split", []event.Event{msg("<|workflow:"), msg(" exit | x|"), msg(">")}, Marker{Exit, "x"}, nil},
		{"prefix joins a line", []event.Event{msg("testing 2/3"), msg("[loop: exit]\n")}, Marker{}, nil},
		{"inline mention", []event.Event{msg("When green I print `[loop: exit]` on its own line.\n")}, Marker{}, nil},
		{"backtick fence", []event.Event{msg("Example:\n```\n[loop: abort | example]\n```\nreal:\n[loop: exit]\n")}, Marker{Exit, ""}, nil},
		{"tilde fence with info", []event.Event{msg("~~~text\n<|workflow: abort | no|>\n~~~\n")}, Marker{}, nil},
		{"longer fence needs longer close", []event.Event{msg("````\n```\n[loop: abort]\n```\n````\n[loop: continue]\n")}, Marker{Continue, ""}, nil},
		{"fence split across chunks", []event.Event{msg("``"), msg("`go\n[loop: abort]\n``"), msg("`\n")}, Marker{}, nil},
		{"inline triple backticks are no fence", []event.Event{msg("```x``` then\n[loop: exit]\n")}, Marker{Exit, ""}, nil},
		{"quoted", []event.Event{msg("The prompt said:\n> [loop: abort | quoted]\n  > <|workflow: exit|>\n")}, Marker{}, nil},
		{"thought counts", []event.Event{thought("thinking\n[loop: abort | in thought]\n")}, Marker{Abort, "in thought"}, nil},
		{"streams are separate lines", []event.Event{msg("[loop: "), thought("noise\n"), msg("exit]\n")}, Marker{Exit, ""}, nil},
		{"tool output never counts", []event.Event{msg("running\n"), tool, toolOut, msg("[loop: continue]\n")}, Marker{Continue, ""}, nil},
		{"a tool call ends the line", []event.Event{msg("[loop: "), tool, msg("exit]\n")}, Marker{}, nil},
		{"a tool call ends an open fence", []event.Event{msg("```\n"), tool, msg("[loop: exit]\n")}, Marker{Exit, ""}, nil},
		{"new message id ends the line", []event.Event{
			{"event": "agent.message_chunk", "messageId": "m1", "content": map[string]any{"text": "[loop: exit"}},
			{"event": "agent.message_chunk", "messageId": "m2", "content": map[string]any{"text": "]\n"}},
		}, Marker{}, nil},
		{"delta text", []event.Event{{"event": "agent.message_chunk", "delta": "[loop: exit | pi]\n"}}, Marker{Exit, "pi"}, nil},
		{"user text never counts", []event.Event{{"event": "user.message_chunk", "content": map[string]any{"text": "[loop: abort]\n"}}}, Marker{}, nil},
		{"severity abort wins", []event.Event{msg("[loop: exit | a]\n[loop: abort | b]\n[loop: continue]\n")}, Marker{Abort, "b"}, nil},
		{"first of the same severity", []event.Event{msg("[loop: exit | first]\n<|workflow: exit | second|>\n")}, Marker{Exit, "first"}, nil},
		{"CRLF", []event.Event{msg("[loop: exit | crlf]\r\n")}, Marker{Exit, "crlf"}, nil},
		{"skip markers", []event.Event{msg("<|team: skip | api|>\n```\n<|team: skip | db|>\n```\n<|team: skip | UI|>")}, Marker{}, []string{"api", "UI"}},
		{"overlong line dropped", []event.Event{msg(strings.Repeat("x", maxLine) + "[loop: abort]\n[loop: exit]\n")}, Marker{Exit, ""}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s Scanner
			for _, ev := range c.evs {
				s.Observe(ev)
			}
			got, skips := s.Result()
			if got != c.want || !reflect.DeepEqual(skips, c.skips) {
				t.Fatalf("got %+v %q, want %+v %q", got, skips, c.want, c.skips)
			}
		})
	}
}

// Every way of cutting a text into chunks finds the same markers.
func TestScannerChunkingInvariant(t *testing.T) {
	text := "intro\n```\n[loop: abort | fenced]\n```\n> [loop: abort | quoted]\n<|workflow: exit | done |>\ntail"
	var whole Scanner
	whole.Feed("message", text)
	want, _ := whole.Result()
	if want != (Marker{Exit, "done"}) {
		t.Fatalf("whole text: %+v", want)
	}
	for size := 1; size <= len(text); size++ {
		var s Scanner
		for i := 0; i < len(text); i += size {
			s.Observe(msg(text[i:min(i+size, len(text))]))
		}
		if got, _ := s.Result(); got != want {
			t.Fatalf("chunks of %d: %+v, want %+v", size, got, want)
		}
	}
}
