package agentproc

import (
	"errors"
	"os/exec"
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds of an exit report.
const (
	// ExitReportLines is how many of the runtime's last stderr lines an
	// exit report quotes.
	ExitReportLines = 8
	// ExitReportBytes bounds the quoted stderr; the cut keeps the end and
	// falls on a rune boundary.
	ExitReportBytes = 2000
)

// ExitStatus says how p ended, for an error message: "exit status 2",
// "signal: killed", "exit status 0", or "its output closed" when it has
// not exited within wait of its output closing.
func ExitStatus(p *Process, wait time.Duration) string {
	select {
	case <-p.Done():
	case <-time.After(wait):
	}
	var exitErr *exec.ExitError
	err := p.ExitErr()
	switch {
	case errors.As(err, &exitErr):
		return exitErr.Error()
	case err != nil:
		return strings.TrimPrefix(err.Error(), "agentproc: ")
	}
	select {
	case <-p.Done():
		return "exit status 0"
	default:
		return "its output closed"
	}
}

// LastLines is the end of a runtime's output for an error message: its
// last n lines (n <= 0: all), at most max bytes (max <= 0: no bound),
// cut at a rune boundary so the text stays valid UTF-8, with "…" where
// the front was cut off.
func LastLines(s string, n, max int) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if n > 0 && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, "\n")
	if max > 0 && len(out) > max {
		cut := len(out) - max
		for cut < len(out) && !utf8.RuneStart(out[cut]) {
			cut++
		}
		out = "…" + out[cut:]
	}
	return out
}

// StderrReport is p's last stderr lines as an error message quotes them
// (ExitReportLines, ExitReportBytes), "" when it wrote none.
func StderrReport(p *Process) string {
	return LastLines(p.StderrTail(), ExitReportLines, ExitReportBytes)
}
