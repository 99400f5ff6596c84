package run

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

func chunk(text string) sdk.Event {
	return sdk.Event{Type: sdk.EventMessageChunk, Fields: map[string]any{"content": map[string]any{"type": "text", "text": text}}}
}

func logLine(seq int, typ, text string) string {
	if text == "" {
		return `{"event":"` + typ + `","run_id":"r","runtime_id":"rt_1","seq":` + itoa(seq) + `,"ts":1}`
	}
	return `{"content":{"text":"` + text + `","type":"text"},"event":"` + typ + `","run_id":"r","runtime_id":"rt_1","seq":` + itoa(seq) + `,"session_id":"s","ts":1}`
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestWrittenIn: of the events a re-attached plugin sends again, those the
// log already ends with are skipped, the others written — whatever host
// events lie between.
func TestWrittenIn(t *testing.T) {
	lines := []string{
		logLine(1, "session.start", ""), logLine(2, "avenor.turn.start", ""),
		logLine(3, "agent.message_chunk", "a"), logLine(4, "agent.status", ""),
		logLine(5, "agent.message_chunk", "b"), logLine(6, "agent.message_chunk", "c"),
	}
	path := filepath.Join(t.TempDir(), "events.ndjson")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tail, err := logTailEvents(path)
	if err != nil {
		t.Fatal(err)
	}
	written := writtenIn(tail)
	for _, tc := range []struct {
		name   string
		replay []string
		want   int
	}{
		{"all written", []string{"a", "b", "c"}, 3},
		{"the last lost", []string{"b", "c", "d"}, 2},
		{"two lost", []string{"c", "d", "e"}, 1},
		{"none written", []string{"d", "e"}, 0},
		{"nothing sent again", nil, 0},
		{"older than the ring", []string{"b", "c"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var evs []sdk.Event
			for _, s := range tc.replay {
				evs = append(evs, chunk(s))
			}
			if got := written(evs); got != tc.want {
				t.Fatalf("written(%v) = %d, want %d", tc.replay, got, tc.want)
			}
		})
	}
}

// TestLogTail: the last complete line's seq and type; a torn last line is
// cut off so that appended lines start on a line of their own.
func TestLogTail(t *testing.T) {
	for _, tc := range []struct {
		name, content, left string
		seq                 int64
		typ                 string
	}{
		{"empty", "", "", 0, ""},
		{"whole", logLine(1, "session.start", "") + "\n" + logLine(2, "session.end", "") + "\n", "", 2, "session.end"},
		{"torn", logLine(1, "session.start", "") + "\n" + `{"event":"agent.mes`, logLine(1, "session.start", "") + "\n", 1, "session.start"},
		{"only torn", `{"event":"agent.mes`, "", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.ndjson")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			seq, typ, err := LogTail(path)
			if err != nil || seq != tc.seq || typ != tc.typ {
				t.Fatalf("LogTail = %d %q %v, want %d %q", seq, typ, err, tc.seq, tc.typ)
			}
			want := tc.content
			if tc.name == "torn" || tc.name == "only torn" {
				want = tc.left
			}
			if got, _ := os.ReadFile(path); string(got) != want {
				t.Fatalf("log left as %q, want %q", got, want)
			}
		})
	}
	if _, _, err := LogTail(filepath.Join(t.TempDir(), "gone")); err == nil || !strings.Contains(err.Error(), "is gone") {
		t.Fatalf("a missing log: %v", err)
	}
}
