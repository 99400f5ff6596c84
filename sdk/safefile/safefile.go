package safefile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Errors, matched with errors.Is; the returned errors name the path, its
// owner or mode, and the fix.
var (
	// ErrNotOwned: the directory or file belongs to another user.
	ErrNotOwned = errors.New("owned by another user")
	// ErrShared: the directory is writable by other users and not sticky,
	// so any of them may replace what avenor writes there.
	ErrShared = errors.New("writable by other users")
	// ErrSymlink: a path avenor must own is a symbolic link.
	ErrSymlink = errors.New("is a symbolic link")
	// ErrNotDir: a path that must be a directory is something else.
	ErrNotDir = errors.New("not a directory")
	// ErrNotRegular: a lock file that is not a regular file.
	ErrNotRegular = errors.New("not a regular file")
)

// CheckDir says whether avenor may create files by name in dir: dir (after
// symlinks, which only its owner or root could have made point elsewhere
// when the link's directory passes too) is a directory owned by this user or
// by root, and other users cannot write it, unless it is sticky (then they
// cannot remove or replace what we create, and the kernel's
// protected_symlinks/protected_regular keep our opens off their entries).
// Group write counts as others' write only when the group is not our own
// primary group: on systems with one private group per user, umask 002
// leaves every directory group-writable by that group alone.
func CheckDir(dir string) error {
	_, err := checkDir(dir)
	return err
}

// checkDir is CheckDir, also saying whether others may create entries in
// dir (it is sticky and shared, like /tmp).
func checkDir(dir string) (shared bool, err error) {
	if dir == "" {
		dir = "."
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return false, &fs.PathError{Op: "check directory", Path: dir, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return false, fmt.Errorf("%s: %w", dir, ErrNotDir)
	}
	euid := uint32(os.Geteuid())
	if st.Uid != euid && st.Uid != 0 {
		return false, fmt.Errorf("directory %s is %w (uid %d), not this user (uid %d) or root: that user may replace or redirect what avenor writes there; use a directory you own", dir, ErrNotOwned, st.Uid, euid)
	}
	shared = othersWrite(st)
	if shared && st.Mode&syscall.S_ISVTX == 0 {
		return true, fmt.Errorf("directory %s is %w (mode %04o) and not sticky: any of them may replace or redirect what avenor writes there; use a directory only you can write, or make it sticky (chmod +t)", dir, ErrShared, st.Mode&0o7777)
	}
	return shared, nil
}

// OpenTrunc opens path for writing from its start, creating it with perm,
// as os.Create does, for a file that must stay at its name while it grows
// (an event log a harness tails). Its directory must pass CheckDir. In a
// shared sticky directory (like /tmp) a symlink at path is refused rather
// than followed, and so is an existing file of another user, whose owner
// could read what avenor writes; in a directory only we and root can write,
// a symlink was put there by one of us and is followed (--on-event
// /dev/stdout keeps working).
func OpenTrunc(path string, perm fs.FileMode) (*os.File, error) {
	shared, err := checkDir(filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		// A missing directory: say so as the open would, naming the file.
		return nil, &fs.PathError{Op: "open", Path: path, Err: syscall.ENOENT}
	}
	if err != nil {
		return nil, err
	}
	// O_NONBLOCK: a named pipe with no reader fails the open instead of
	// blocking it (regular files ignore the flag).
	flags := os.O_WRONLY | os.O_CREATE | syscall.O_CLOEXEC | syscall.O_NONBLOCK
	if shared {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, perm)
	// ELOOP from O_NOFOLLOW, or EACCES where the kernel's protected_symlinks
	// refused first.
	if fi, lerr := os.Lstat(path); err != nil && shared && lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s %w in a directory other users can write: one of them may have planted it to redirect avenor's writes; remove it or use a directory only you can write", path, ErrSymlink)
	}
	if err != nil {
		return nil, err
	}
	st, err := fstat(f)
	if err != nil {
		return nil, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return f, nil // a device or pipe: nothing to truncate
	}
	if shared && int(st.Uid) != os.Geteuid() {
		f.Close()
		return nil, fmt.Errorf("%s is %w (uid %d), in a directory other users can write: that user could read what avenor writes; remove it or use a directory only you can write", path, ErrNotOwned, st.Uid)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// fstat is what the file f just opened is (not what its name may point to
// by now); on failure f is closed, so the caller only returns the error.
func fstat(f *os.File) (syscall.Stat_t, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return st, err
	}
	return st, nil
}

// othersWrite says whether users other than the owner may write.
func othersWrite(st syscall.Stat_t) bool {
	return st.Mode&0o002 != 0 || (st.Mode&0o020 != 0 && st.Gid != uint32(os.Getegid()))
}

// PrivateDir makes dir a directory only this user can use: missing
// directories are created 0700 (their parent must pass CheckDir); an existing
// dir must not be a symlink, must be ours and not writable by others, and is
// tightened to 0700. A directory another user pre-created at a predictable
// name is refused: everything avenor would put in it would be theirs to
// read or replace.
func PrivateDir(dir string) error {
	dir = filepath.Clean(dir)
	var st syscall.Stat_t
	err := syscall.Lstat(dir, &st)
	if errors.Is(err, syscall.ENOENT) {
		parent := filepath.Dir(dir)
		if parent != dir {
			if err := PrivateDirParent(parent); err != nil {
				return err
			}
		}
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		err = syscall.Lstat(dir, &st)
	}
	if err != nil {
		return &fs.PathError{Op: "check directory", Path: dir, Err: err}
	}
	switch {
	case st.Mode&syscall.S_IFMT == syscall.S_IFLNK:
		return fmt.Errorf("%s %w (owned by uid %d), not a directory avenor made: another user may have planted it; %s", dir, ErrSymlink, st.Uid, relocateHint(dir))
	case st.Mode&syscall.S_IFMT != syscall.S_IFDIR:
		return fmt.Errorf("%s: %w; remove it", dir, ErrNotDir)
	case st.Uid != uint32(os.Geteuid()):
		return fmt.Errorf("directory %s is %w (uid %d), not this user (uid %d): another user made it at a name avenor uses; %s", dir, ErrNotOwned, st.Uid, os.Geteuid(), relocateHint(dir))
	}
	if st.Mode&0o7777 != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return err
		}
	}
	// An entry of a directory others may write can be renamed away and
	// replaced, whatever its own owner and mode.
	return CheckDir(filepath.Dir(dir))
}

// PrivateDirParent creates the missing ancestors of a private directory,
// 0700 each, and checks the nearest existing one with CheckDir.
func PrivateDirParent(dir string) error {
	if _, err := os.Lstat(dir); err == nil {
		return CheckDir(dir)
	}
	if err := PrivateDirParent(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return CheckDir(dir)
}

// Create creates path, which must not exist, for writing: O_EXCL refuses
// anything already there, a symlink included, and O_NOFOLLOW says so
// explicitly.
func Create(path string, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
}

// randomSuffix is 8 random hex digits.
func randomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// WriteFile replaces path with data, atomically and without following
// anything planted: path's directory must pass CheckDir, the bytes go to
// <path>.tmp-<random> created with Create, which is given perm, synced and
// renamed over path (rename replaces a symlink at path, it never writes
// through it). No temporary file is left behind on any error.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	if err := CheckDir(filepath.Dir(path)); err != nil {
		return err
	}
	var (
		f   *os.File
		tmp string
		err error
	)
	for range 8 { // a collision is 1 in 2^32; a squatter could only make it fail
		tmp = path + ".tmp-" + randomSuffix()
		if f, err = Create(tmp, 0o600); !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	fail := func(err error) error {
		_ = f.Close()
		_ = os.Remove(tmp)
		return err
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Chmod(perm); err != nil { // fchmod: umask does not apply
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// OpenLock opens (creating it 0600 if missing) a lock file in a directory
// that passes CheckDir. A symlink is refused (O_NOFOLLOW), and so is a file
// of another user: whoever owns the lock file can hold its lock forever.
func OpenLock(path string) (*os.File, error) {
	if err := CheckDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("lock file %s %w: another user may have planted it; remove it", path, ErrSymlink)
	}
	if err != nil {
		if uid, ok := Owner(path); ok && uid != os.Geteuid() {
			return nil, fmt.Errorf("lock file %s is %w (uid %d), not this user (uid %d): %v; remove it or use a path in a directory you own", path, ErrNotOwned, uid, os.Geteuid(), err)
		}
		return nil, err
	}
	st, err := fstat(f)
	if err != nil {
		return nil, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		f.Close()
		return nil, fmt.Errorf("lock file %s: %w; remove it", path, ErrNotRegular)
	}
	if int(st.Uid) != os.Geteuid() {
		f.Close()
		return nil, fmt.Errorf("lock file %s is %w (uid %d), not this user (uid %d): that user can hold the lock for ever; remove it or use a path in a directory you own", path, ErrNotOwned, st.Uid, os.Geteuid())
	}
	return f, nil
}

// Owner is the uid that owns path (not following a symlink).
func Owner(path string) (int, bool) {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return 0, false
	}
	return int(st.Uid), true
}

// StaleName is the name RemoveStale recognises: <prefix><pid>-<anything>.
func StaleName(prefix string, pid int) string {
	return prefix + strconv.Itoa(pid) + "-"
}

// RemoveStale removes what dead avenor processes left in dir: entries named
// <prefix><pid>-… (StaleName) that this user owns and whose pid no longer
// runs. Another user's entry and a live process's entry stay. It returns the
// paths it removed; errors (an unreadable dir) leave things as they are.
func RemoveStale(dir, prefix string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		digits, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(digits)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if uid, ok := Owner(path); !ok || uid != os.Geteuid() {
			continue
		}
		if ProcessAlive(pid) {
			continue
		}
		if err := os.RemoveAll(path); err == nil {
			removed = append(removed, path)
		}
	}
	return removed
}

// ProcessAlive says whether pid runs (a zombie does not: it will never
// clean up). A process of another user counts as alive.
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: trust kill(0)
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		if f := strings.Fields(s[i+1:]); len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
			return false
		}
	}
	return true
}
