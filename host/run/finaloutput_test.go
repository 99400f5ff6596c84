package run

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoggedFinalOutput: result reads a cut final_output back from the
// log, scanning lines from its end: the session.end of the asked seq,
// whatever follows it, however long its line.
func TestLoggedFinalOutput(t *testing.T) {
	long := strings.Repeat("é", 200<<10) // a line of several reads
	lines := []string{
		`{"event":"session.start","seq":1}`,
		`{"event":"session.end","final_output":"first","seq":2}`,
		`{"event":"agent.message_chunk","content":{"text":"x"},"seq":3}`,
		`{"event":"session.end","final_output":"` + long + `","seq":4}`,
		`{"event":"session.end","seq":5}`,
		`{"event":"avenor.turn.start","seq":6}`,
	}
	path := filepath.Join(t.TempDir(), "events.ndjson")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		seq  int64
		want string
		err  error
	}{
		{2, "first", nil},
		{4, long, nil},
		{5, "", nil},
		{3, "", errNotLogged}, // not a session.end
		{9, "", errNotLogged},
	} {
		got, err := loggedFinalOutput(path, tc.seq)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("seq %d: %d bytes, %v; want %d bytes, %v", tc.seq, len(got), err, len(tc.want), tc.err)
		}
	}
	if _, err := loggedFinalOutput(filepath.Join(t.TempDir(), "gone"), 2); err == nil {
		t.Error("a missing log answered")
	}
}
