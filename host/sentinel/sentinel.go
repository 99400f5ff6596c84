package sentinel

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/safefile"
)

// Record is what one sentinel says. The zero value is a clean end with no
// session and no run id.
type Record struct {
	// ExitCode decides the status line (docs/run.md#sentinel) and, for KILLED and FAILED, is
	// written as EXIT_CODE.
	ExitCode int
	// SessionID is the last attempt's session id; written even when empty.
	SessionID string
	// StopReason is the last attempt's stop reason; when empty the status's
	// default is written (end_turn, timeout, cancelled, blocked, exit_N).
	StopReason sdk.StopReason
	// Reason is the abort marker's label; written only for BLOCKED.
	Reason string
	// RunID is the run's correlation id; the RUN line is omitted when empty.
	RunID string
}

// lineBreaks turns every CR and every LF into one space, so a value can never
// start a line of its own ("\r\n" becomes two spaces; each character is
// replaced, nothing is collapsed).
var lineBreaks = strings.NewReplacer("\r", " ", "\n", " ")

// Format returns the exact bytes of the sentinel for r (docs/run.md#sentinel):
//
//	<STATUS>
//	SESSION=<id>
//	STOP_REASON=<reason>
//	EXIT_CODE=<n>     KILLED and FAILED only
//	REASON=<label>    BLOCKED with a label only
//	RUN=<run id>      when known
func Format(r Record) []byte {
	status := Status(r.ExitCode)
	stop := r.StopReason
	if stop == "" {
		stop = sentinelStopReason(r.ExitCode)
	}

	var b strings.Builder
	b.Grow(64 + len(r.SessionID) + len(stop) + len(r.Reason) + len(r.RunID))
	b.WriteString(status)
	b.WriteString("\nSESSION=")
	lineBreaks.WriteString(&b, r.SessionID)
	b.WriteString("\nSTOP_REASON=")
	lineBreaks.WriteString(&b, string(stop))
	b.WriteByte('\n')
	if status == StatusKilled || status == StatusFailed {
		b.WriteString("EXIT_CODE=")
		b.WriteString(strconv.Itoa(r.ExitCode))
		b.WriteByte('\n')
	}
	if status == StatusBlocked && r.Reason != "" {
		b.WriteString("REASON=")
		lineBreaks.WriteString(&b, r.Reason)
		b.WriteByte('\n')
	}
	if r.RunID != "" {
		b.WriteString("RUN=")
		lineBreaks.WriteString(&b, r.RunID)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// ErrEmptyPath is returned by Write and Remove when no path was given.
var ErrEmptyPath = errors.New("sentinel: empty path")

// Write replaces the sentinel at path with Format(r), atomically: the bytes go
// to a temporary file of random name in the same directory (created
// O_EXCL|O_NOFOLLOW, so nothing planted there is followed), which is synced
// and renamed over path, so a harness polling path sees either nothing or the
// whole file. No temporary file is left behind on any error. A missing parent
// directory is an error (the contract says the caller reports it and no file
// is written); the directory is never created here. A directory another user
// owns, or that others may write and is not sticky, is refused
// (safefile.CheckDir): they could redirect or replace the sentinel.
//
// The sentinel is 0644: it is read by the harness, which may run as another
// user in the same group, as a plain file would be.
func Write(path string, r Record) error {
	if path == "" {
		return ErrEmptyPath
	}
	if err := safefile.WriteFile(path, Format(r), 0o644); err != nil {
		return fmt.Errorf("write sentinel %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	syncDir(dir)
	return nil
}

// syncDir makes the rename durable. It is best effort: the sentinel is
// already visible, and some filesystems refuse to sync a directory.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// Remove deletes a stale sentinel before a run starts (docs/run.md#lifecycle). A
// sentinel that does not exist is not an error.
func Remove(path string) error {
	if path == "" {
		return ErrEmptyPath
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove sentinel %s: %w", path, err)
	}
	return nil
}
