package sentinel

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

func TestReadLastSessionEnd(t *testing.T) {
	tests := []struct {
		name      string
		log       string
		wantSID   string
		wantStop  sdk.StopReason
		wantError bool
	}{
		{"single", `{"event":"session.end","session_id":"ses_abc","stop_reason":"end_turn"}` + "\n", "ses_abc", "end_turn", false},
		{"last wins",
			`{"event":"agent.message_chunk","session_id":"ses_x"}` + "\n" +
				`{"event":"session.end","session_id":"ses_first","stop_reason":"timeout"}` + "\n" +
				`{"event":"session.end","session_id":"ses_last","stop_reason":"end_turn"}` + "\n",
			"ses_last", "end_turn", false},
		{"later events do not erase it",
			`{"event":"session.end","session_id":"ses_1","stop_reason":"error"}` + "\n" +
				`{"event":"avenor.retry","attempt":2}` + "\n",
			"ses_1", "error", false},
		{"no session.end", `{"event":"agent.message_chunk","session_id":"ses_x"}` + "\n", "", "", false},
		{"empty log", "", "", "", false},
		{"malformed skipped",
			"not-json\n" + `{"event":"session.end","session_id":"ses_good","stop_reason":"end_turn"}` + "\n" + `{"event":"session.end",` + "\n",
			"ses_good", "end_turn", false},
		{"non-object lines skipped", "null\n[1]\n\"session.end\"\n" + `{"event":"session.end","session_id":"s","stop_reason":"refusal"}` + "\n" + "null\n", "s", "refusal", false},
		{"camelCase fallback", `{"event":"session.end","sessionID":"ses_camel","stop_reason":"cancelled"}` + "\n", "ses_camel", "cancelled", false},
		{"snake_case preferred", `{"event":"session.end","sessionID":"camel","session_id":"snake","stop_reason":"end_turn"}` + "\n", "snake", "end_turn", false},
		{"empty snake_case falls back", `{"event":"session.end","sessionID":"camel","session_id":"","stop_reason":"end_turn"}` + "\n", "camel", "end_turn", false},
		{"keys are exact", `{"event":"session.end","SESSION_ID":"x","Stop_Reason":"y"}` + "\n", "", "", false},
		{"non-string values ignored", `{"event":"session.end","session_id":7,"stop_reason":null}` + "\n", "", "", false},
		{"no trailing newline", `{"event":"session.end","session_id":"s","stop_reason":"max_tokens"}`, "s", "max_tokens", false},
		{"crlf lines", `{"event":"session.end","session_id":"s","stop_reason":"end_turn"}` + "\r\n", "s", "end_turn", false},
		{"later session.end without fields wins", `{"event":"session.end","session_id":"s","stop_reason":"end_turn"}` + "\n" + `{"event":"session.end"}` + "\n", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.ndjson")
			if err := os.WriteFile(path, []byte(tt.log), 0o600); err != nil {
				t.Fatal(err)
			}
			sid, stop, err := ReadLastSessionEnd(path)
			if err != nil {
				t.Fatalf("ReadLastSessionEnd: %v", err)
			}
			if sid != tt.wantSID || stop != tt.wantStop {
				t.Fatalf("ReadLastSessionEnd = (%q, %q), want (%q, %q)", sid, stop, tt.wantSID, tt.wantStop)
			}
		})
	}
}

func TestReadLastSessionEndMissingLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.ndjson")
	_, _, err := ReadLastSessionEnd(path)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("ReadLastSessionEnd(missing) = %v, want a not-exist error naming the path", err)
	}
}

func TestReadLastSessionEndReadError(t *testing.T) {
	boom := errors.New("boom")
	r := iotest.DataErrReader(iotest.ErrReader(boom))
	if _, _, err := readLastSessionEnd(r, MaxLogLine); !errors.Is(err, boom) {
		t.Fatalf("readLastSessionEnd = %v, want %v", err, boom)
	}
}

// Lines over the bound are skipped without being buffered, including a
// session.end that is only slightly too long; the lines around it still count.
func TestReadLastSessionEndSkipsLongLines(t *testing.T) {
	good := `{"event":"session.end","session_id":"ok","stop_reason":"end_turn"}`
	long := `{"event":"session.end","session_id":"long","stop_reason":"error","final_output":"` + strings.Repeat("x", 200<<10) + `"}`
	const limit = 100 << 10 // more than bufio's buffer, less than the long line

	sid, stop, err := readLastSessionEnd(strings.NewReader(good+"\n"+long+"\n"), limit)
	if err != nil || sid != "ok" || stop != "end_turn" {
		t.Fatalf("long last line: (%q, %q, %v), want (ok, end_turn, nil)", sid, stop, err)
	}
	sid, stop, err = readLastSessionEnd(strings.NewReader(long+"\n"+good), limit)
	if err != nil || sid != "ok" || stop != "end_turn" {
		t.Fatalf("long first line: (%q, %q, %v), want (ok, end_turn, nil)", sid, stop, err)
	}
	// At or under the bound the long line is parsed.
	sid, _, err = readLastSessionEnd(strings.NewReader(good+"\n"+long+"\n"), len(long))
	if err != nil || sid != "long" {
		t.Fatalf("line at the bound: (%q, %v), want long", sid, err)
	}
	sid, _, err = readLastSessionEnd(strings.NewReader(good+"\n"+long+"\n"), len(long)-1)
	if err != nil || sid != "ok" {
		t.Fatalf("line one byte over the bound: (%q, %v), want ok", sid, err)
	}
}

// referenceLastSessionEnd is the obvious implementation the scanner must agree
// with: split on newlines, drop lines over the bound, decode each.
func referenceLastSessionEnd(data []byte, maxLine int) (string, sdk.StopReason) {
	var sid string
	var stop sdk.StopReason
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) > maxLine {
			continue
		}
		var m map[string]any
		if json.Unmarshal(line, &m) != nil || m == nil || m["event"] != "session.end" {
			continue
		}
		s, _ := m["session_id"].(string)
		if s == "" {
			s, _ = m["sessionID"].(string)
		}
		r, _ := m["stop_reason"].(string)
		sid, stop = s, sdk.StopReason(r)
	}
	return sid, stop
}

func FuzzReadLastSessionEnd(f *testing.F) {
	f.Add([]byte(`{"event":"session.end","session_id":"a","stop_reason":"end_turn"}`+"\n"), 64)
	f.Add([]byte("x\n"+`{"event":"session.end","sessionID":"b"}`), 1000)
	f.Add([]byte(`{"event":"session.end","session_id":"","sessionID":"c","stop_reason":"x\u2028"}`+"\r\n\n"), 10)
	f.Add([]byte(`{"event":"session.end","session_id":"\ud800","stop_reason":"\xff"}`), 200)
	f.Fuzz(func(t *testing.T, data []byte, maxLine int) {
		if maxLine < 0 {
			maxLine = -maxLine
		}
		maxLine %= 1 << 12
		sid, stop, err := readLastSessionEnd(bytes.NewReader(data), maxLine)
		if err != nil {
			t.Fatalf("readLastSessionEnd: %v", err)
		}
		// Small reads exercise the fragment path of the scanner.
		sid2, stop2, err := readLastSessionEnd(iotest.OneByteReader(bytes.NewReader(data)), maxLine)
		if err != nil || sid2 != sid || stop2 != stop {
			t.Fatalf("one-byte reader = (%q, %q, %v), want (%q, %q)", sid2, stop2, err, sid, stop)
		}
		wantSID, wantStop := referenceLastSessionEnd(data, maxLine)
		if sid != wantSID || stop != wantStop {
			t.Fatalf("readLastSessionEnd(%q, %d) = (%q, %q), want (%q, %q)", data, maxLine, sid, stop, wantSID, wantStop)
		}
	})
}
