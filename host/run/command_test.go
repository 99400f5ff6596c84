package run

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/host/sentinel"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

func TestRawFlagValue(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sentinel-file", "s"}, "s"},
		{[]string{"--sentinel-file=s"}, "s"},
		{[]string{"-sentinel-file", "s"}, "s"},
		{[]string{"-sentinel-file=s"}, "s"},
		{[]string{"--prompt", "x", "--sentinel-file"}, ""},
		{[]string{"--", "--sentinel-file", "s"}, ""},
		{[]string{"--sentinel-filex", "s"}, ""},
	} {
		if got := rawFlagValue(tc.args, "sentinel-file"); got != tc.want {
			t.Errorf("rawFlagValue(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// A command line that does not parse still writes the FAILED sentinel it
// names, exit 2, with its run id.
func TestWriteUsageSentinel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	var stderr bytes.Buffer
	WriteUsageSentinel([]string{"--bogus", "--sentinel-file", path, "-run-id=r1"}, &stderr)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FAILED\n", "EXIT_CODE=2\n", "STOP_REASON=refusal\n", "RUN=r1\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("sentinel %q lacks %q", b, want)
		}
	}
	WriteUsageSentinel([]string{"--bogus"}, &stderr) // none named: nothing written
	if stderr.Len() != 0 {
		t.Errorf("stderr: %q", stderr.String())
	}
}

func TestExitWithSentinel(t *testing.T) {
	lost := errors.New("disk full")
	for _, tc := range []struct {
		res  Result
		want int
		says bool
	}{
		{Result{ExitCode: 0}, 0, false},
		{Result{ExitCode: 0, SentinelErr: lost}, sentinel.ExitFailure, true},
		{Result{ExitCode: sentinel.ExitTimeout, SentinelErr: lost}, sentinel.ExitTimeout, false},
	} {
		var stderr bytes.Buffer
		if got := exitWithSentinel(tc.res, &stderr); got != tc.want || (stderr.Len() > 0) != tc.says {
			t.Errorf("exitWithSentinel(%+v) = %d, stderr %q", tc.res, got, stderr.String())
		}
	}
}

func TestEventDestination(t *testing.T) {
	var stdout bytes.Buffer
	if w, closeEvents, err := eventDestination("", &stdout); w != nil || err != nil {
		t.Errorf("none: %v, %v", w, err)
	} else {
		closeEvents()
	}
	if w, _, err := eventDestination("-", &stdout); w != &stdout || err != nil {
		t.Errorf("-: %v, %v", w, err)
	}
	if _, _, err := eventDestination(t.TempDir(), &stdout); err == nil || !strings.HasPrefix(err.Error(), "--on-event: ") {
		t.Errorf("a directory: %v", err)
	}
	w, closeEvents, err := eventDestination(filepath.Join(t.TempDir(), "log"), &stdout)
	if err != nil || w == nil {
		t.Fatalf("a file: %v", err)
	}
	closeEvents()
}

// Under the live view the note leaves out what the view shows above it.
func TestUnansweredNoteUnderTheView(t *testing.T) {
	req := sdk.PermissionRequest{ID: "p1", Options: []sdk.PermissionOption{{ID: "allow", Kind: "allow_once"}}}
	full, shown := unansweredNote(req, "", false), unansweredNote(req, "", true)
	if !strings.Contains(full, "  asks: ") || !strings.Contains(full, "  options: ") {
		t.Fatalf("full note: %q", full)
	}
	if strings.Contains(shown, "  asks: ") || strings.Contains(shown, "  options: ") || !strings.Contains(shown, "permission request p1 is waiting") {
		t.Errorf("note under the view: %q", shown)
	}
}
