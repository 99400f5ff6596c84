package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	goplugin "github.com/hashicorp/go-plugin"
)

// verifiedPrefix names the private directories of verified copies.
const verifiedPrefix = "avenor-plugin-verified-"

// verifiedCopy copies the binary at path into a new private directory,
// hashing the very bytes it copies, and returns the copy once their hash is
// sc's checksum: the copy is what runs. Checking path and then executing
// path, as go-plugin's SecureConfig does, let a binary swapped (renamed over)
// or rewritten between the check and the exec run unchecked. Nobody else can
// reach the copy: its directory is 0700, the copy itself 0500.
//
// A copy rather than exec of the opened file by its descriptor
// (/proc/self/fd/N): an open descriptor still sees a rewrite in place of the
// same file, and a process exec'd through /proc/self/fd is named after the
// descriptor's number. The copy keeps the binary's name, so the process is
// still avenor-plugin-<family> in ps and /proc.
//
// The directory is made in the temporary directory, or, when that is
// mounted noexec, beside the binary (whose own directory runs binaries).
// remove deletes the copy and its directory; it may be called as soon as
// the process has started (the running process keeps the file), and more
// than once.
func verifiedCopy(path string, sc *goplugin.SecureConfig) (copyPath string, remove func(), err error) {
	if len(sc.Checksum) == 0 {
		return "", nil, goplugin.ErrSecureConfigNoChecksum
	}
	if sc.Hash == nil {
		return "", nil, goplugin.ErrSecureConfigNoHash
	}
	src, err := os.Open(path)
	if err != nil {
		return "", nil, err
	}
	defer src.Close()
	if st, err := src.Stat(); err != nil {
		return "", nil, err
	} else if !st.Mode().IsRegular() {
		return "", nil, fmt.Errorf("%s is not a regular file", path)
	}
	dir, err := privateDir(filepath.Dir(path))
	if err != nil {
		return "", nil, err
	}
	var once sync.Once
	remove = func() { once.Do(func() { _ = os.RemoveAll(dir) }) }
	dst := filepath.Join(dir, filepath.Base(path))
	if err := copyHashing(dst, src, sc); err != nil {
		remove()
		return "", nil, err
	}
	return dst, remove, nil
}

// copyHashing writes src to dst (a new file) and checks the hash of what it
// wrote.
func copyHashing(dst string, src io.Reader, sc *goplugin.SecureConfig) error {
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err != nil {
		return err
	}
	sc.Hash.Reset()
	_, err = io.Copy(io.MultiWriter(out, sc.Hash), src)
	// Closed before the exec: a file open for writing cannot be executed.
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copying the plugin to run it: %w", err)
	}
	if !bytes.Equal(sc.Hash.Sum(nil), sc.Checksum) {
		return ErrChecksumMismatch
	}
	return os.Chmod(dst, 0o500)
}

// privateDir makes a new 0700 directory for a verified copy: in the
// temporary directory unless it is mounted noexec, else in beside.
func privateDir(beside string) (string, error) {
	var errs []error
	for _, parent := range []string{os.TempDir(), beside} {
		if noexec(parent) {
			errs = append(errs, fmt.Errorf("%s is mounted noexec", parent))
			continue
		}
		dir, err := os.MkdirTemp(parent, verifiedPrefix) // 0700
		if err == nil {
			return dir, nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("no directory to run a verified copy of the plugin from (set TMPDIR to a directory that allows executables): %w", errors.Join(errs...))
}
