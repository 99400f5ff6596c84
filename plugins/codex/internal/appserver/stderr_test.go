package appserver

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestStderrTailIsRuneSafe: the stderr tail in an error is cut at a rune
// boundary, so a message with non-ASCII output stays valid UTF-8 (it
// crosses gRPC, which refuses invalid strings).
func TestStderrTailIsRuneSafe(t *testing.T) {
	tail := strings.Repeat("é", 1500) + ".\n" // 3001 bytes: a cut 2000 from the end lands inside a rune
	got := stderrTail(tail)
	if !utf8.ValidString(got) {
		t.Fatalf("the stderr tail is not valid UTF-8: it was cut inside a rune")
	}
	if !strings.HasSuffix(got, "é.") || len(got) > 2100 {
		t.Errorf("the tail keeps %d bytes ending %q; want about 2000 ending with the output's end", len(got), got[len(got)-2:])
	}
}
