package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runWatchMain drives `avenor <args>` in process.
func runWatchMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(args, Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

const watchTestdata = "../../host/watch/testdata/session"

func TestWatchGoldenThroughMain(t *testing.T) {
	log := watchTestdata + ".ndjson"
	cases := []struct {
		golden string
		args   []string
	}{
		{"plain", nil},
		{"plain_classify", []string{"--classify"}},
		{"json", []string{"--format", "json"}},
		{"json_classify", []string{"--format=json", "-classify"}}, // single-dash long flags work too
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			want, err := os.ReadFile(watchTestdata + "." + c.golden + ".golden")
			if err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runWatchMain(t, append(append([]string{"watch"}, c.args...), log)...)
			if code != 0 || stdout != string(want) {
				t.Errorf("exit %d, stdout:\n%s\nwant:\n%s", code, stdout, want)
			}
			if wantErr := "avenor watch: skipped 1 malformed line(s) in " + log + "\n"; stderr != wantErr {
				t.Errorf("stderr = %q, want %q", stderr, wantErr)
			}
		})
	}
}

func TestWatchCursorThroughMain(t *testing.T) {
	dir := t.TempDir()
	log, cursor := filepath.Join(dir, "ev.ndjson"), filepath.Join(dir, "ev.cursor")
	first := `{"event":"session.start","backend":"echo","session_id":"s1"}` + "\n"
	if err := os.WriteFile(log, []byte(first), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := runWatchMain(t, "watch", "--since-cursor", cursor, log)
	if code != 0 || stdout != "EVENT session.start s1 backend=echo\n" {
		t.Fatalf("first watch: exit %d, %q", code, stdout)
	}
	if b, _ := os.ReadFile(cursor); string(b) != fmt.Sprintf("%d\n", len(first)) {
		t.Errorf("cursor = %q", b)
	}

	second := `{"event":"session.end","session_id":"s1","stop_reason":"end_turn"}` + "\n"
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(second)
	f.Close()
	code, stdout, _ = runWatchMain(t, "watch", "--follow", "--poll-interval", "10ms", "--since-cursor", cursor, log)
	if code != 0 || stdout != "EVENT session.end s1 stop_reason=end_turn\n" {
		t.Fatalf("second watch: exit %d, %q", code, stdout)
	}
	if b, _ := os.ReadFile(cursor); string(b) != fmt.Sprintf("%d\n", len(first)+len(second)) {
		t.Errorf("cursor = %q", b)
	}

	if err := os.WriteFile(log, []byte(first), 0o644); err != nil { // the log was rewritten
		t.Fatal(err)
	}
	code, stdout, stderr := runWatchMain(t, "watch", "--since-cursor", cursor, log)
	want := fmt.Sprintf("avenor watch: log %s shorter than cursor (offset %d > size %d) (cursor %s)\n",
		log, len(first)+len(second), len(first), cursor)
	if code != 1 || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr %q\nwant exit 1 and %q", code, stdout, stderr, want)
	}
}

func TestWatchUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no log", []string{"watch"}, "watch takes one log file (or - for standard input), got 0 arguments"},
		{"two logs", []string{"watch", "a", "b"}, "watch takes one log file (or - for standard input), got 2 arguments"},
		{"sentinel without follow", []string{"watch", "--sentinel-file", "s", "x"}, "--sentinel-file says when a follow ends; add --follow or drop it"},
		{"cursor on stdin", []string{"watch", "--since-cursor", "c", "-"}, "--since-cursor needs a log file, and - is standard input"},
		{"bad format", []string{"watch", "--format", "yaml", "x"}, `--format must be plain, json or transcript, not "yaml"`},
		{"bad poll interval", []string{"watch", "--poll-interval", "0s", "x"}, "--poll-interval must be positive, not 0s"},
		{"unknown flag", []string{"watch", "--tail", "x"}, "unknown flag: --tail"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runWatchMain(t, c.args...)
			if code != 2 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, c.want)
			}
		})
	}
}

func TestWatchMissingLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "missing.ndjson")
	code, _, stderr := runWatchMain(t, "watch", log)
	if code != 1 || !strings.HasPrefix(stderr, "avenor watch: open "+log) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) || isTerminal(&bytes.Buffer{}) {
		t.Error("a regular file or a buffer is not a terminal")
	}
}
