package runtime

import (
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"ascii cut", "abcdef", 3, "abc…"},
		{"cut inside a 2-byte rune", "aé", 2, "a…"},
		{"cut after a 2-byte rune", "aéb", 3, "aé…"},
		{"cut inside a 4-byte rune", "x😀y", 3, "x…"},
		{"zero", "abc", 0, "…"},
		{"negative", "abc", -1, "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Truncate(tt.s, tt.n)
			if got != tt.want {
				t.Errorf("Truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("Truncate(%q, %d) = %q is not valid UTF-8", tt.s, tt.n, got)
			}
		})
	}
}

func FuzzTruncate(f *testing.F) {
	f.Add("héllo wörld 😀", 5)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n > 1<<20 || n < -10 {
			return
		}
		got := Truncate(s, n)
		if len(s) <= n {
			if got != s {
				t.Fatalf("Truncate(%q, %d) = %q, want s unchanged", s, n, got)
			}
			return
		}
		body := got[:len(got)-len("…")]
		if len(body) > max(n, 0) || s[:len(body)] != body {
			t.Fatalf("Truncate(%q, %d) = %q: not a prefix of at most n bytes", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Truncate(%q, %d) = %q: cut a rune", s, n, got)
		}
	})
}
