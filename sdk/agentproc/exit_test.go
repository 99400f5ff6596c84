package agentproc

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLastLines(t *testing.T) {
	tests := []struct {
		name, in string
		n, max   int
		want     string
	}{
		{"empty", "\n", 8, 100, ""},
		{"last lines", "a\nb\nc\n", 2, 100, "b\nc"},
		{"all lines", "a\nb", 0, 0, "a\nb"},
		{"bytes cut keeps the end", "abcdef", 0, 3, "…def"},
		{"cut inside a rune moves to the next", strings.Repeat("é", 3) + ".", 0, 4, "…é."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := LastLines(tt.in, tt.n, tt.max)
			if got != tt.want {
				t.Errorf("LastLines(%q, %d, %d) = %q, want %q", tt.in, tt.n, tt.max, got, tt.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("not valid UTF-8: %q", got)
			}
		})
	}
}
