package nearest

import (
	"errors"
	"testing"
)

func TestName(t *testing.T) {
	cmds := []string{"answer", "await", "backends", "control", "run", "stable", "watch"}
	for _, c := range []struct {
		typed, want string
	}{
		{"backend", "backends"},
		{"contrl", "control"},
		{"wacth", "watch"},
		{"stabel", "stable"},
		{"rn", "run"},
		{"hello", ""},
		{"run", ""}, // the name itself is no typo
		{"x", ""},
		{"back", "backends"}, // a prefix
	} {
		got, ok := Name(c.typed, cmds)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("Name(%q) = %q, %v; want %q", c.typed, got, ok, c.want)
		}
	}
	if d := Distance("ecoh", "echo"); d != 1 {
		t.Errorf("a transposition is %d edits, want 1", d)
	}
}

func TestFlagHint(t *testing.T) {
	flags := []string{"prompt", "backend", "dir"}
	for _, tc := range []struct{ err, want string }{
		{"unknown flag: --promt", "unknown flag: --promt; did you mean --prompt?"},
		{"unknown flag: --zzzzzz", "unknown flag: --zzzzzz"},
		{"unknown shorthand flag: 'x' in -x", "unknown shorthand flag: 'x' in -x"},
		{"flag needs an argument: --dir", "flag needs an argument: --dir"},
	} {
		in := errors.New(tc.err)
		got := FlagHint(in, flags)
		if got.Error() != tc.want || !errors.Is(got, in) {
			t.Errorf("FlagHint(%q) = %q, want %q wrapping the original", tc.err, got, tc.want)
		}
	}
}
