package nearest

import "testing"

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
