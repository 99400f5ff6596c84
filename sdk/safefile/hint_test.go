package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRelocateHint(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		dir  string
		want string
	}{
		{"state dir", map[string]string{"XDG_STATE_HOME": "/s"}, "/s/avenor/stable/ab", "set XDG_STATE_HOME"},
		{"state dir by default under home", nil, "/home/u/.local/state/avenor/stable", "set XDG_STATE_HOME"},
		{"a relative XDG_STATE_HOME is ignored", map[string]string{"XDG_STATE_HOME": "rel"}, "/home/u/.local/state/avenor", "set XDG_STATE_HOME"},
		{"temporary dir", nil, "/tmp/x/avenor-stable", "set TMPDIR"},
		{"the closest base wins", map[string]string{"TMPDIR": "/home/u/.local/state/tmp"}, "/home/u/.local/state/tmp/avenor-stable", "set TMPDIR"},
		{"state inside TMPDIR", map[string]string{"TMPDIR": "/t", "XDG_STATE_HOME": "/t/state"}, "/t/state/avenor", "set XDG_STATE_HOME"},
		{"sockets under home", nil, "/home/u/.avenor/sockets", "set HOME"},
		{"data dir", map[string]string{"XDG_DATA_HOME": "/d"}, "/d/avenor/plugins", "set XDG_DATA_HOME"},
		{"a prefix of a name is not a parent", map[string]string{"XDG_STATE_HOME": "/s"}, "/state/avenor", "use a directory you own"},
		{"elsewhere", nil, "/srv/avenor", "use a directory you own"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"} {
				t.Setenv(k, "")
			}
			t.Setenv("HOME", "/home/u")
			t.Setenv("TMPDIR", "/tmp/x")
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			if got := relocateHint(c.dir); !strings.HasSuffix(got, c.want) && !strings.Contains(got, c.want+" ") {
				t.Errorf("relocateHint(%q) = %q, want it to say %q", c.dir, got, c.want)
			}
		})
	}
}

// TestPrivateDirStateHint: a supervisor's state directory that another user
// made first is refused with advice about XDG_STATE_HOME, where it comes
// from, not TMPDIR.
func TestPrivateDirStateHint(t *testing.T) {
	needRoot(t)
	root := t.TempDir()
	state := filepath.Join(root, "state")
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("TMPDIR", filepath.Join(root, "tmp"))
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	planted := mkdir(t, filepath.Join(state, "avenor"), 0o755, otherUID)
	err := PrivateDir(planted)
	if !errors.Is(err, ErrNotOwned) {
		t.Fatalf("PrivateDir = %v, want ErrNotOwned", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "set XDG_STATE_HOME to a directory you own") || strings.Contains(msg, "TMPDIR") {
		t.Errorf("PrivateDir = %q, want it to advise XDG_STATE_HOME and not TMPDIR", msg)
	}
}
