package watch

import "testing"

// TestDigestMatchesOriginal pins the plain lines of the original `avenor
// watch` (harness compatibility with the original): the session column is empty, not "-", when an
// event has no session_id; "sessionID" is the fallback key; and each excerpt
// has the original's form. The separators stay even around an empty column,
// so `cut -d' ' -f3` is always the session and `-f4-` the excerpt.
func TestDigestMatchesOriginal(t *testing.T) {
	cases := []struct{ name, line, want string }{
		{"no session id leaves the column empty",
			`{"event":"avenor.loop.start","max_iterations":5,"pre_phase_count":1,"loop_phase_count":4}`,
			"EVENT avenor.loop.start  loop start, max_iterations=5"},
		{"sessionID is the fallback key",
			`{"event":"agent.message_chunk","sessionID":"ses_2","content":{"text":"hi"}}`,
			"EVENT agent.message_chunk ses_2 hi"},
		{"session_id wins over sessionID",
			`{"event":"agent.message_chunk","session_id":"ses_1","sessionID":"ses_2","content":{"text":"hi"}}`,
			"EVENT agent.message_chunk ses_1 hi"},
		{"empty session_id falls back to sessionID",
			`{"event":"agent.message_chunk","session_id":"","sessionID":"ses_2","content":{"text":"hi"}}`,
			"EVENT agent.message_chunk ses_2 hi"},
		{"empty excerpt keeps its separator",
			`{"event":"user.message_chunk","session_id":"ses_1","content":[{"text":"not a text object"}]}`,
			"EVENT user.message_chunk ses_1 "},
		{"no session and no excerpt",
			`{"event":"agent.message_chunk","content":{"text":""}}`,
			"EVENT agent.message_chunk  "},
		{"status with label",
			`{"event":"agent.status","session_id":"ses_1","phase":"working","label":"go test ./...","source":"avenor"}`,
			"EVENT agent.status ses_1 working | go test ./..."},
		{"status without label",
			`{"event":"agent.status","session_id":"ses_1","phase":"thinking","source":"avenor"}`,
			"EVENT agent.status ses_1 thinking"},
		{"retry with attempt and max",
			`{"event":"avenor.retry","attempt":2,"max_retries":3,"run_id":"r1"}`,
			"EVENT avenor.retry  attempt=2/3"},
		{"retry without attempt",
			`{"event":"avenor.retry","run_id":"r1"}`,
			"EVENT avenor.retry  retrying"},
		{"permission prefers the question",
			`{"event":"permission.request","session_id":"ses_1","tool":"bash","question":"Allow rm -rf build?","request_id":"7"}`,
			"EVENT permission.request ses_1 Allow rm -rf build?"},
		{"permission falls back to the tool",
			`{"event":"permission.request","session_id":"ses_1","question":"","tool":"exec"}`,
			"EVENT permission.request ses_1 exec"},
		{"plan label",
			`{"event":"session.plan","session_id":"ses_1","label":"Refactor","title":"Draft plan"}`,
			"EVENT session.plan ses_1 Refactor"},
		{"plan falls back to the title",
			`{"event":"session.plan","session_id":"ses_1","label":"","title":"Draft plan"}`,
			"EVENT session.plan ses_1 Draft plan"},
		{"loop end",
			`{"event":"avenor.loop.end","iterations_completed":2,"exit_reason":"marker","exit_label":"tests green"}`,
			"EVENT avenor.loop.end  loop end: marker"},
		{"phase end without marker suffix",
			`{"event":"avenor.phase.end","phase":"test","iteration":2,"stop_reason":"end_turn","exit_marker":true,"exit_marker_label":"tests green"}`,
			"EVENT avenor.phase.end  phase: test → end_turn"},
		{"phase start",
			`{"event":"avenor.phase.start","phase":"test","iteration":2,"kind":"loop"}`,
			"EVENT avenor.phase.start  phase: test (iter 2)"},
		{"session end shows the stop reason only",
			`{"event":"session.end","session_id":"ses_1","stop_reason":"error","error_message":"boom"}`,
			"EVENT session.end ses_1 stop_reason=error"},
		{"session end without a stop reason",
			`{"event":"session.end","session_id":"ses_1"}`,
			"EVENT session.end ses_1 stop_reason="},
		{"tool title equal to the kind is kept",
			`{"event":"tool.call","session_id":"ses_1","kind":"read","title":"read","status":"pending"}`,
			"EVENT tool.call ses_1 read:read [pending]"},
		{"tool kind title status",
			`{"event":"tool.call","session_id":"ses_1","kind":"shell","title":"go test","status":"running"}`,
			"EVENT tool.call ses_1 shell:go test [running]"},
		{"tool title only",
			`{"event":"tool.call_update","session_id":"ses_1","title":"build"}`,
			"EVENT tool.call_update ses_1 build"},
		{"tool status only",
			`{"event":"tool.call_update","session_id":"ses_1","toolCallId":"t9","status":"failed"}`,
			"EVENT tool.call_update ses_1 [failed]"},
		{"error with source and message",
			`{"event":"avenor.error","source":"permission","message":"handler timed out"}`,
			"EVENT avenor.error  permission: handler timed out"},
		{"error with source only",
			`{"event":"avenor.error","session_id":"ses_1","source":"cancel"}`,
			"EVENT avenor.error ses_1 cancel"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Printer{}.Append(nil, []byte(c.line), mustParse(t, c.line))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want+"\n" {
				t.Errorf("%s\n got %q\nwant %q", c.line, got, c.want+"\n")
			}
		})
	}
}

// TestDigestSessionColumn: the Digest's SessionID is "" (not "-") without a
// session, and sessionID is read when session_id is absent.
func TestDigestSessionColumn(t *testing.T) {
	for line, want := range map[string]string{
		`{"event":"avenor.retry","attempt":2}`:                     "",
		`{"event":"session.end","sessionID":"ses_legacy"}`:         "ses_legacy",
		`{"event":"session.end","session_id":"a","sessionID":"b"}`: "a",
	} {
		d, ok := DigestLine([]byte(line))
		if !ok || d.SessionID != want {
			t.Errorf("%s: SessionID = %q (ok %v), want %q", line, d.SessionID, ok, want)
		}
	}
}
