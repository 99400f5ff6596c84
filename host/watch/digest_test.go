package watch

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func mustParse(t *testing.T, line string) Event {
	t.Helper()
	ev, err := ParseLine([]byte(line))
	if err != nil {
		t.Fatalf("ParseLine(%s): %v", line, err)
	}
	return ev
}

// TestPlainLinesOfTheContract pins the example lines of docs/watch.md.
func TestPlainLinesOfTheContract(t *testing.T) {
	cases := []struct{ line, want string }{
		{`{"event":"tool.call","session_id":"ses_123","kind":"read","title":"/repo/main.go","status":"pending","toolCallId":"t1"}`,
			"EVENT tool.call ses_123 read:/repo/main.go [pending]"},
		{`{"event":"tool.call_update","session_id":"ses_123","kind":"read","status":"completed","toolCallId":"t1"}`,
			"EVENT tool.call_update ses_123 read [completed]"},
		{`{"event":"avenor.phase.start","session_id":"ses_123","phase":"code_review","iteration":1,"kind":"loop"}`,
			"EVENT avenor.phase.start ses_123 phase: code_review (iter 1)"},
		{`{"event":"avenor.phase.end","session_id":"ses_123","phase":"code_review","iteration":1,"stop_reason":"end_turn"}`,
			"EVENT avenor.phase.end ses_123 phase: code_review → end_turn"},
		{`{"event":"session.end","session_id":"ses_123","stop_reason":"end_turn","final_output":"x","usage":{"input_tokens":1}}`,
			"EVENT session.end ses_123 stop_reason=end_turn"},
		{`{"event":"agent.status","session_id":"ses_123","phase":"thinking","source":"avenor"}`,
			"EVENT agent.status ses_123 thinking"},
	}
	for _, c := range cases {
		got, err := Printer{}.Append(nil, []byte(c.line), mustParse(t, c.line))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want+"\n" {
			t.Errorf("%s\n got %q\nwant %q", c.line, got, c.want)
		}
	}
}

func TestExcerpt(t *testing.T) {
	long := strings.Repeat("é", 200)
	cases := []struct{ name, line, want string }{
		{"message text", `{"event":"agent.message_chunk","content":{"type":"text","text":"hello\n\n  world\r\n"}}`, "hello world"},
		{"thought text", `{"event":"agent.thought_chunk","content":{"text":"hmm"}}`, "hmm"},
		{"user text", `{"event":"user.message_chunk","content":{"text":"do it"}}`, "do it"},
		{"delta instead of content", `{"event":"agent.message_chunk","delta":"from pi"}`, "from pi"},
		{"empty chunk", `{"event":"agent.message_chunk","content":{"text":""}}`, ""},
		{"control characters", `{"event":"agent.message_chunk","content":{"text":"a\u001b[2Jb\tc\u202ed"}}`, "a [2Jb c d"},
		{"long text cut to 120 runes", `{"event":"agent.message_chunk","content":{"text":"` + long + `"}}`, strings.Repeat("é", 119) + "…"},
		{"exactly 120 runes kept", `{"event":"agent.message_chunk","content":{"text":"` + long[:240] + `"}}`, long[:240]},
		{"tool without title", `{"event":"tool.call","kind":"bash","status":"pending"}`, "bash [pending]"},
		{"tool without kind", `{"event":"tool.call","title":"Run tests","status":"running"}`, "Run tests [running]"},
		{"tool title equal to kind", `{"event":"tool.call","kind":"read","title":"read","status":"pending"}`, "read:read [pending]"},
		{"claude tool", `{"event":"tool.call","kind":"tool","title":"Bash","status":"running","tool_use_id":"tu1"}`, "tool:Bash [running]"},
		{"tool with status only", `{"event":"tool.call_update","toolCallId":"t9","status":"failed"}`, "[failed]"},
		{"phase start without iteration", `{"event":"avenor.phase.start","phase":"plan","kind":"pre"}`, "phase: plan"},
		{"team phase start", `{"event":"avenor.phase.start","phase":"review","iteration":0,"kind":"team"}`, "phase: review (iter 0)"},
		{"phase end leaves the exit marker out", `{"event":"avenor.phase.end","phase":"test","stop_reason":"end_turn","exit_marker":true,"exit_marker_label":"tests green"}`, "phase: test → end_turn"},
		{"phase end leaves the abort marker out", `{"event":"avenor.phase.end","phase":"test","stop_reason":"end_turn","exit_marker":true,"exit_marker_label":"x","abort_marker":true,"abort_marker_label":"stuck"}`, "phase: test → end_turn"},
		{"session end with error", `{"event":"session.end","stop_reason":"error","error_message":"boom"}`, "stop_reason=error"},
		{"status with label", `{"event":"agent.status","phase":"working","label":"go test ./..."}`, "working | go test ./..."},
		{"permission tool and question", `{"event":"permission.request","tool":"bash","question":"Allow rm -rf build?"}`, "Allow rm -rf build?"},
		{"permission question only", `{"event":"permission.request","question":"Proceed?"}`, "Proceed?"},
		{"permission tool only", `{"event":"permission.request","tool":"edit"}`, "edit"},
		{"permission question names the tool", `{"event":"permission.request","tool":"bash","question":"Allow bash: ls?"}`, "Allow bash: ls?"},
		{"error", `{"event":"avenor.error","source":"permission","message":"file handler: timeout"}`, "permission: file handler: timeout"},
		{"error without source", `{"event":"avenor.error","message":"oops"}`, "oops"},
		{"generic sorted and envelope-free", `{"event":"child.question","ts":1,"seq":2,"run_id":"r","session_id":"s","request_id":"cq_1","child_id":"rt_2","message":"which db?"}`, `child_id=rt_2 message="which db?" request_id=cq_1`},
		{"generic nested and null", `{"event":"x.y","b":null,"a":{"k":[true,1.5]},"c":false}`, `a={"k":[true,1.5]} b=null c=false`},
		{"generic no fields", `{"event":"x.y","ts":1}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Excerpt(mustParse(t, c.line)); got != c.want {
				t.Errorf("Excerpt = %q, want %q", got, c.want)
			}
		})
	}
}

func TestTokens(t *testing.T) {
	cases := []struct{ line, want string }{
		{`{"event":"agent.status","phase":"done"}`, "EVENT agent.status  done\n"},
		{`{"event":"odd name\n","session_id":"a b"}`, "EVENT odd_name_ a_b \n"},
		{`{"event":"n","session_id":42}`, "EVENT n 42 \n"},
	}
	for _, c := range cases {
		got, _ := Printer{}.Append(nil, []byte(c.line), mustParse(t, c.line))
		if string(got) != c.want {
			t.Errorf("%s: got %q, want %q", c.line, got, c.want)
		}
	}
}

func TestParseLine(t *testing.T) {
	bad := []string{``, `   `, `[1,2]`, `"s"`, `null`, `{"event":"a"} {"event":"b"}`, `{"event":"a"`, `{"event":"a"}x`}
	for _, l := range bad {
		if _, err := ParseLine([]byte(l)); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseLine(%q) = %v, want ErrMalformed", l, err)
		}
	}
	ev, err := ParseLine([]byte(` {"event":5} `))
	if err != nil || ev.Name() != "" {
		t.Errorf("a non-string event is no event: %v %q", err, ev.Name())
	}
}

func TestColor(t *testing.T) {
	line := `{"event":"session.end","session_id":"s1","stop_reason":"timeout"}`
	got, _ := Printer{Classify: true, Color: true}.Append(nil, []byte(line), mustParse(t, line))
	want := "\x1b[1;31mMILESTONE\x1b[0m EVENT \x1b[1;31msession.end\x1b[0m \x1b[2ms1\x1b[0m stop_reason=timeout\n"
	if string(got) != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	line = `{"event":"agent.status","phase":"thinking"}`
	got, _ = Printer{Color: true}.Append(nil, []byte(line), mustParse(t, line))
	if want := "EVENT \x1b[36magent.status\x1b[0m  thinking\n"; string(got) != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	got, _ = Printer{Format: JSON, Color: true}.Append(nil, []byte(line), mustParse(t, line))
	if string(got) != line+"\n" {
		t.Errorf("JSON must never be coloured: %q", got)
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"": Plain, "plain": Plain, "json": JSON} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseFormat("yaml"); err == nil || err.Error() != `--format must be plain, json or transcript, not "yaml"` {
		t.Errorf("ParseFormat(yaml) = %v", err)
	}
}

func FuzzDigestLine(f *testing.F) {
	f.Add([]byte(`{"event":"tool.call","session_id":"ses_123","kind":"read","title":"/repo/main.go","status":"pending"}`))
	f.Add([]byte(`{"event":"agent.message_chunk","content":{"text":"a\nb\u0000c` + strings.Repeat("é", 130) + `"}}`))
	f.Add([]byte(`{"event":"x","a":{"b":[1,{"c":null}]},"n":1e400}`))
	f.Add([]byte(`{"event":"session.end","stop_reason":7}`))
	f.Add([]byte("{\"event\":\"agent.status\",\"phase\":\"\xff\xfe\"}"))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, line []byte) {
		d, ok := DigestLine(line)
		if !ok {
			return
		}
		if n := utf8.RuneCountInString(d.Excerpt); n > MaxExcerptRunes {
			t.Fatalf("excerpt has %d runes: %q", n, d.Excerpt)
		}
		if !utf8.ValidString(d.Excerpt) || strings.ContainsAny(d.Excerpt, "\n\r") {
			t.Fatalf("excerpt is not one valid line: %q", d.Excerpt)
		}
		if strings.ContainsAny(d.Event+d.SessionID, " \n\r\t") || d.Event == "" {
			t.Fatalf("columns not single tokens: %q %q", d.Event, d.SessionID)
		}
		if _, err := (Printer{Classify: true, Format: JSON}).Append(nil, line, mustParse(t, string(line))); err != nil {
			t.Fatalf("json: %v", err)
		}
	})
}
