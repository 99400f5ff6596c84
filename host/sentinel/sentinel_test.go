package sentinel

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		rec  Record
		want string
	}{
		// The five exact examples of docs/run.md#sentinel.
		{"contract done", Record{ExitCode: 0, SessionID: "ses_abc123", StopReason: "end_turn", RunID: "a1b2c3d4e5f60718"},
			"DONE\nSESSION=ses_abc123\nSTOP_REASON=end_turn\nRUN=a1b2c3d4e5f60718\n"},
		{"contract killed", Record{ExitCode: 130, SessionID: "ses_k", StopReason: "cancelled", RunID: "deadbeefcafe0002"},
			"KILLED\nSESSION=ses_k\nSTOP_REASON=cancelled\nEXIT_CODE=130\nRUN=deadbeefcafe0002\n"},
		{"contract refusal", Record{ExitCode: 2, SessionID: "ses_r", StopReason: "refusal"},
			"FAILED\nSESSION=ses_r\nSTOP_REASON=refusal\nEXIT_CODE=2\n"},
		{"contract blocked", Record{ExitCode: 5, SessionID: "ses_b", StopReason: "blocked", Reason: "loop limit exceeded", RunID: "deadbeefcafe0004"},
			"BLOCKED\nSESSION=ses_b\nSTOP_REASON=blocked\nREASON=loop limit exceeded\nRUN=deadbeefcafe0004\n"},
		{"contract empty session", Record{ExitCode: 0, StopReason: "end_turn"},
			"DONE\nSESSION=\nSTOP_REASON=end_turn\n"},

		// Defaults when the stop reason is empty.
		{"done default", Record{ExitCode: 0, SessionID: "ses_x"}, "DONE\nSESSION=ses_x\nSTOP_REASON=end_turn\n"},
		{"timeout default", Record{ExitCode: 124, SessionID: "ses_t"}, "TIMEOUT\nSESSION=ses_t\nSTOP_REASON=timeout\n"},
		{"killed default", Record{ExitCode: 130, SessionID: "ses_k"}, "KILLED\nSESSION=ses_k\nSTOP_REASON=cancelled\nEXIT_CODE=130\n"},
		{"blocked default", Record{ExitCode: 5, SessionID: "ses_b"}, "BLOCKED\nSESSION=ses_b\nSTOP_REASON=blocked\n"},
		{"failed default", Record{ExitCode: 1, SessionID: "ses_f"}, "FAILED\nSESSION=ses_f\nSTOP_REASON=exit_1\nEXIT_CODE=1\n"},
		{"failed default keeps the code", Record{ExitCode: 2}, "FAILED\nSESSION=\nSTOP_REASON=exit_2\nEXIT_CODE=2\n"},
		{"failed odd code", Record{ExitCode: 137}, "FAILED\nSESSION=\nSTOP_REASON=exit_137\nEXIT_CODE=137\n"},
		{"zero record", Record{}, "DONE\nSESSION=\nSTOP_REASON=end_turn\n"},

		// Explicit reasons, with and without run id.
		{"timeout progress", Record{ExitCode: 124, SessionID: "ses_t", StopReason: "progress_timeout", RunID: "r1"},
			"TIMEOUT\nSESSION=ses_t\nSTOP_REASON=progress_timeout\nRUN=r1\n"},
		{"failed with run", Record{ExitCode: 1, SessionID: "ses_f", StopReason: "some_error", RunID: "deadbeefcafe0003"},
			"FAILED\nSESSION=ses_f\nSTOP_REASON=some_error\nEXIT_CODE=1\nRUN=deadbeefcafe0003\n"},
		{"failed config load", Record{ExitCode: 1, StopReason: "error"}, "FAILED\nSESSION=\nSTOP_REASON=error\nEXIT_CODE=1\n"},
		{"killed forced", Record{ExitCode: 130, SessionID: "s", StopReason: "cancelled_forced"},
			"KILLED\nSESSION=s\nSTOP_REASON=cancelled_forced\nEXIT_CODE=130\n"},

		// REASON only for BLOCKED, only when set.
		{"blocked without reason with run", Record{ExitCode: 5, SessionID: "ses_b", StopReason: "blocked", RunID: "deadbeefcafe0005"},
			"BLOCKED\nSESSION=ses_b\nSTOP_REASON=blocked\nRUN=deadbeefcafe0005\n"},
		{"blocked reason without run", Record{ExitCode: 5, SessionID: "ses_b", StopReason: "blocked", Reason: "architectural issue: layering violation in pkg/db"},
			"BLOCKED\nSESSION=ses_b\nSTOP_REASON=blocked\nREASON=architectural issue: layering violation in pkg/db\n"},
		{"reason ignored when done", Record{ExitCode: 0, SessionID: "s", Reason: "nope"}, "DONE\nSESSION=s\nSTOP_REASON=end_turn\n"},
		{"reason ignored when failed", Record{ExitCode: 1, SessionID: "s", StopReason: "error", Reason: "nope"},
			"FAILED\nSESSION=s\nSTOP_REASON=error\nEXIT_CODE=1\n"},

		// CR/LF injection: each CR and each LF becomes one space.
		{"run id injection", Record{ExitCode: 0, SessionID: "ses_abc123", StopReason: "end_turn", RunID: "run-1\nFAILED\rEXIT_CODE=1"},
			"DONE\nSESSION=ses_abc123\nSTOP_REASON=end_turn\nRUN=run-1 FAILED EXIT_CODE=1\n"},
		{"reason injection", Record{ExitCode: 5, SessionID: "ses_b", StopReason: "blocked", Reason: "bad\nREASON=injected\rstuff"},
			"BLOCKED\nSESSION=ses_b\nSTOP_REASON=blocked\nREASON=bad REASON=injected stuff\n"},
		{"session and stop injection", Record{ExitCode: 1, SessionID: "a\r\nb", StopReason: "x\n\ny"},
			"FAILED\nSESSION=a  b\nSTOP_REASON=x  y\nEXIT_CODE=1\n"},
		{"only newlines", Record{ExitCode: 5, SessionID: "\n", Reason: "\r", RunID: "\n"},
			"BLOCKED\nSESSION= \nSTOP_REASON=blocked\nREASON= \nRUN= \n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(Format(tt.rec)); got != tt.want {
				t.Fatalf("Format(%+v)\n got: %q\nwant: %q", tt.rec, got, tt.want)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.done")
	rec := Record{ExitCode: 0, SessionID: "ses_w", StopReason: "end_turn", RunID: "r"}
	if err := Write(path, rec); err != nil {
		t.Fatalf("Write: %v", err)
	}
	assertFile(t, path, "DONE\nSESSION=ses_w\nSTOP_REASON=end_turn\nRUN=r\n")
	assertOnly(t, dir, "run.done")

	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o644 {
		t.Errorf("sentinel mode = %v, want 0644", perm)
	}
}

func TestWriteReplacesExisting(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.done")
	if err := os.WriteFile(path, []byte("DONE\nSESSION=old\nSTOP_REASON=end_turn\nRUN=a-much-longer-run-id-than-the-new-one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, Record{ExitCode: 124}); err != nil {
		t.Fatalf("Write: %v", err)
	}
	assertFile(t, path, "TIMEOUT\nSESSION=\nSTOP_REASON=timeout\n")
	assertOnly(t, dir, "run.done")
}

func TestWriteRelativePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := Write("rel.done", Record{ExitCode: 130}); err != nil {
		t.Fatalf("Write: %v", err)
	}
	assertFile(t, filepath.Join(dir, "rel.done"), "KILLED\nSESSION=\nSTOP_REASON=cancelled\nEXIT_CODE=130\n")
	assertOnly(t, dir, "rel.done")
}

func TestWriteMissingParent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "no-such-dir", "run.done")
	err := Write(path, Record{})
	if err == nil {
		t.Fatal("Write into a missing directory succeeded")
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v does not match fs.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the path %s", err, path)
	}
	assertOnly(t, dir)
}

func TestWriteOntoDirectoryLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.done")
	// A non-empty directory at the sentinel path makes the rename fail
	// after the temporary file was written.
	if err := os.MkdirAll(filepath.Join(path, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, Record{}); err == nil {
		t.Fatal("Write over a directory succeeded")
	}
	assertOnly(t, dir, "run.done")
}

func TestWriteEmptyPath(t *testing.T) {
	if err := Write("", Record{}); !errors.Is(err, ErrEmptyPath) {
		t.Fatalf("Write(\"\") = %v, want ErrEmptyPath", err)
	}
	if err := Remove(""); !errors.Is(err, ErrEmptyPath) {
		t.Fatalf("Remove(\"\") = %v, want ErrEmptyPath", err)
	}
}

func TestRemove(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.done")
	if err := Remove(path); err != nil {
		t.Fatalf("Remove of a missing sentinel: %v", err)
	}
	if err := Write(path, Record{}); err != nil {
		t.Fatal(err)
	}
	if err := Remove(path); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	assertOnly(t, dir)

	// A failure other than not-exist is reported and names the path.
	full := filepath.Join(dir, "full")
	if err := os.MkdirAll(filepath.Join(full, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Remove(full); err == nil || !strings.Contains(err.Error(), full) {
		t.Fatalf("Remove of a non-empty directory = %v, want an error naming it", err)
	}
}

func assertFile(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read sentinel: %v", err)
	}
	if string(got) != want {
		t.Fatalf("sentinel bytes\n got: %q\nwant: %q", got, want)
	}
}

// assertOnly fails when dir holds anything but names (no temp files).
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("directory holds %q, want %q", got, names)
	}
}

func FuzzFormat(f *testing.F) {
	f.Add(0, "ses_abc123", "end_turn", "", "a1b2c3d4e5f60718")
	f.Add(130, "ses_k", "", "", "")
	f.Add(5, "ses_b", "blocked", "bad\nREASON=x\r", "r\n")
	f.Add(2, "a\r\nb", "refusal", "", "")
	f.Add(-7, "", "", "", "")
	f.Fuzz(func(t *testing.T, exit int, session, stop, reason, run string) {
		rec := Record{ExitCode: exit, SessionID: session, StopReason: sdk.StopReason(stop), Reason: reason, RunID: run}
		out := Format(rec)

		wantLines := 3 // status, SESSION, STOP_REASON
		status := Status(exit)
		if status == StatusKilled || status == StatusFailed {
			wantLines++
		}
		if status == StatusBlocked && reason != "" {
			wantLines++
		}
		if run != "" {
			wantLines++
		}
		if n := bytes.Count(out, []byte("\n")); n != wantLines {
			t.Fatalf("Format(%+v) has %d lines, want %d: %q", rec, n, wantLines, out)
		}
		if !bytes.HasSuffix(out, []byte("\n")) {
			t.Fatalf("Format(%+v) does not end with a newline: %q", rec, out)
		}
		if bytes.ContainsRune(out, '\r') {
			t.Fatalf("Format(%+v) contains CR: %q", rec, out)
		}
		lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		switch lines[0] {
		case StatusDone, StatusTimeout, StatusKilled, StatusBlocked, StatusFailed:
		default:
			t.Fatalf("line 1 %q is not a status", lines[0])
		}
		if lines[0] != status {
			t.Fatalf("line 1 = %q, want %q", lines[0], status)
		}
		if want := "SESSION=" + lineBreaks.Replace(session); lines[1] != want {
			t.Fatalf("line 2 = %q, want %q", lines[1], want)
		}
		if !strings.HasPrefix(lines[2], "STOP_REASON=") || lines[2] == "STOP_REASON=" {
			t.Fatalf("line 3 = %q, want a non-empty STOP_REASON", lines[2])
		}
	})
}
