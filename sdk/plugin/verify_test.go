package plugin

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"
)

// TestVerifiedCopy: the copy holds exactly the bytes hashed, in a private
// directory, read-only for its owner; a mismatch leaves nothing behind, and
// remove deletes the copy and its directory.
func TestVerifiedCopy(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	bin := filepath.Join(t.TempDir(), "avenor-plugin-x")
	content := []byte("#!/bin/sh\necho pinned\n")
	if err := os.WriteFile(bin, content, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	sc := func(sum []byte) *goplugin.SecureConfig {
		return &goplugin.SecureConfig{Checksum: sum, Hash: sha256.New()}
	}

	copied, remove, err := verifiedCopy(bin, sc(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(copied) != "avenor-plugin-x" || filepath.Dir(filepath.Dir(copied)) != tmp {
		t.Errorf("copy at %s, want <TMPDIR>/%s*/avenor-plugin-x", copied, verifiedPrefix)
	}
	if got, _ := os.ReadFile(copied); string(got) != string(content) {
		t.Errorf("copy holds %q", got)
	}
	if st, _ := os.Stat(copied); st.Mode().Perm() != 0o500 {
		t.Errorf("copy mode %v, want 0500", st.Mode().Perm())
	}
	if st, _ := os.Stat(filepath.Dir(copied)); st.Mode().Perm() != 0o700 {
		t.Errorf("copy directory mode %v, want 0700", st.Mode().Perm())
	}
	remove()
	remove()
	if _, err := os.Stat(filepath.Dir(copied)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("remove left %s", filepath.Dir(copied))
	}

	other := sha256.Sum256([]byte("another build"))
	if _, _, err := verifiedCopy(bin, sc(other[:])); !errors.Is(err, ErrChecksumMismatch) {
		t.Fatalf("mismatch: %v", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("a mismatch left %v in TMPDIR", left)
	}
	if _, _, err := verifiedCopy(bin, &goplugin.SecureConfig{Hash: sha256.New()}); !errors.Is(err, goplugin.ErrSecureConfigNoChecksum) {
		t.Errorf("no checksum: %v", err)
	}
}
