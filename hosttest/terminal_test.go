package hosttest

import (
	"regexp"
	"testing"
)

// TestHTTPDebugTokenOnTerminal: with --http-debug and stderr a terminal the
// token line of contract §5.8 is printed, above the live view, so a person
// can use the listener; the live view's writer in front of stderr must not
// hide that stderr is a terminal.
func TestHTTPDebugTokenOnTerminal(t *testing.T) {
	w := newWorld(t)
	r := w.startPTY([]string{"NO_COLOR=1"}, "--backend", "scripted", "--prompt", "say hi\nsleep 1s",
		"--http-debug", "127.0.0.1:0")
	if code := r.wait(); code != 0 {
		t.Fatalf("exit %d; terminal:\n%s", code, r.text())
	}
	screen := r.text()
	if !regexp.MustCompile(`avenor: http debug token: [0-9a-f]{32}\r?\n`).MatchString(screen) {
		t.Errorf("no token line on the terminal:\n%s", screen)
	}
	if !regexp.MustCompile(`■ end_turn · exit 0`).MatchString(screen) {
		t.Errorf("no live view:\n%s", screen)
	}
}
