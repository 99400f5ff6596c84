package pi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteGateSharedFallback: without a state directory the gate goes to
// $TMPDIR/avenor-plugin-pi; another user who made that directory first
// (and could put a gate of their own in it, which pi would run) gets it
// refused, not used.
func TestWriteGateSharedFallback(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test makes a directory owned by another uid")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	squat := filepath.Join(tmp, "avenor-plugin-pi")
	if err := os.Mkdir(squat, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(squat, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(squat, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	path, err := writeGate("")
	if err == nil || !strings.Contains(err.Error(), squat) || !strings.Contains(err.Error(), "uid 65534") {
		t.Fatalf("writeGate in another user's %s = %q, %v; want an error naming it and its owner", squat, path, err)
	}

	// Our own fallback directory is used.
	own := t.TempDir()
	t.Setenv("TMPDIR", own)
	path, err = writeGate("")
	if err != nil || !strings.HasPrefix(path, filepath.Join(own, "avenor-plugin-pi")) {
		t.Fatalf("writeGate = %q, %v", path, err)
	}
	if st, err := os.Stat(filepath.Join(own, "avenor-plugin-pi")); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("fallback dir mode %v %v, want 0700", st.Mode(), err)
	}
}
