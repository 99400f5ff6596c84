package plugins

import (
	"errors"
	"testing"
)

// TestBackendHint: an unknown backend's error keeps the contract's first
// line, then names the backend meant (when one is close) and the installed
// ones, sorted; it still wraps the NotFoundError.
func TestBackendHint(t *testing.T) {
	nf := &NotFoundError{Backend: "ecoh"}
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"pi", "echo"}, "unknown backend \"ecoh\"\ndid you mean echo? installed: echo, pi\n" + nf.Error()},
		{[]string{"pi", "codex"}, "unknown backend \"ecoh\"\ninstalled: codex, pi\n" + nf.Error()},
	} {
		err := BackendHint(nf, tc.names)
		if err.Error() != tc.want {
			t.Errorf("BackendHint(%v) =\n%s\nwant\n%s", tc.names, err, tc.want)
		}
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("BackendHint(%v) does not wrap ErrNotFound", tc.names)
		}
	}
}
