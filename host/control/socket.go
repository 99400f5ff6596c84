package control

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/avenor-go/avenor/sdk/safefile"
)

// staleDialTimeout bounds the dial that tells a live socket from a stale one
// (docs/control-protocol.md#transport-and-framing).
const staleDialTimeout = 250 * time.Millisecond

// LockWait bounds the wait for <socket>.control.lock. Its holder keeps it
// only to bind or unlink (a stale-socket dial of staleDialTimeout at most),
// so a lock held longer is held by something else — another avenor that
// hangs, or a process of the same user squatting on it — and waiting for
// ever would make avenor run hang at start with no output.
const LockWait = 5 * time.Second

// lockPoll is how often a busy lock is tried again within LockWait.
const lockPoll = 50 * time.Millisecond

// umaskMu serialises the process-wide umask change around bind.
var umaskMu sync.Mutex

// socketFile is a bound control socket and the identity of its inode, so a
// clean stop unlinks only the socket this server made.
type socketFile struct {
	path     string
	lockPath string
	dev, ino uint64
	// shared: the socket's directory is sticky and others may write it;
	// Start warns about it.
	shared bool
}

// othersMayWrite says whether users other than this one may create
// entries in dir (it passed safefile.CheckDir, so it is then sticky):
// others' write bit, or a group write bit of a group not our own.
func othersMayWrite(dir string) (bool, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return false, err
	}
	return st.Mode&0o002 != 0 || (st.Mode&0o020 != 0 && st.Gid != uint32(os.Getegid())), nil
}

// checkFree refuses a path in a shared sticky directory that holds an
// entry of another user: a socket bound there first serves every client
// that trusts the path (it reads their prompts and forges answers), and
// whatever it is, only its owner may remove it. Our own entry goes on to
// the usual in-use/stale check.
func checkFree(path string) error {
	var st syscall.Stat_t
	err := syscall.Lstat(path, &st)
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("control socket %s: %w", path, err)
	}
	if me := os.Geteuid(); int(st.Uid) != me {
		return fmt.Errorf("%w: %s already exists in %s, a directory every user can write, and belongs to uid %d, not this user (uid %d). "+
			"Another user may be listening there to read what clients send and forge the answers. Refusing to start: "+
			"use a control socket in a directory only you can write (e.g. $XDG_RUNTIME_DIR/avenor.sock), or have uid %d's owner or root remove it",
			ErrSquatted, path, filepath.Dir(path), st.Uid, me, st.Uid)
	}
	return nil
}

// listenSocket binds path as docs/control-protocol.md#transport-and-framing says: parent directory created
// 0700, bind and cleanup serialised by an flock on <path>.control.lock, an
// existing socket dialled — answering means in use, only ECONNREFUSED proves
// it stale and lets it be removed — then bind under umask 077 and chmod 0600.
func listenSocket(path string) (*net.UnixListener, *socketFile, error) {
	if path == "" {
		return nil, nil, errors.New("control socket path is empty")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, fmt.Errorf("control socket directory: %w", err)
	}
	// In a directory others may write, they could replace the socket or
	// hold its lock: refuse it (a sticky one like /tmp is fine).
	if err := safefile.CheckDir(filepath.Dir(path)); err != nil {
		return nil, nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	shared, err := othersMayWrite(filepath.Dir(path))
	if err != nil {
		return nil, nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	if shared {
		if err := checkFree(path); err != nil {
			return nil, nil, err
		}
	}
	sf := &socketFile{path: path, lockPath: path + ".control.lock", shared: shared}
	unlock, err := sf.lock()
	if err != nil {
		return nil, nil, err
	}
	defer unlock()

	if err := removeIfStale(path); err != nil {
		return nil, nil, err
	}
	ln, err := bindPrivate(path)
	if err != nil {
		return nil, nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false) // Close unlinks only our own inode, below
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		_ = os.Remove(path)
		return nil, nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		ln.Close()
		return nil, nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	sf.dev, sf.ino = uint64(st.Dev), uint64(st.Ino)
	return ln, sf, nil
}

// lock takes the flock on the lock file, waiting at most LockWait; the
// returned func releases it. The lock file stays: removing it would let two
// processes lock different files of the same name. A lock file that is a
// symlink or belongs to another user is refused (safefile.OpenLock): its
// owner could hold the lock for ever.
func (sf *socketFile) lock() (func(), error) {
	f, err := safefile.OpenLock(sf.lockPath)
	if err != nil {
		return nil, fmt.Errorf("control socket lock: %w", err)
	}
	deadline := time.Now().Add(LockWait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if errors.Is(err, syscall.EWOULDBLOCK) && time.Now().Before(deadline) {
			time.Sleep(lockPoll)
			continue
		}
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		holder := lockHolders(f)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is still locked after %v%s; stop that process or use another --control-socket path",
				ErrLockBusy, sf.lockPath, LockWait, holder)
		}
		return nil, fmt.Errorf("control socket lock %s: %w", sf.lockPath, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// lockHolders names the processes holding f's flock, from /proc/locks, as
// " by pid P (uid U)"; "" when they cannot be told.
func lockHolders(f *os.File) string {
	var st syscall.Stat_t
	if syscall.Fstat(int(f.Fd()), &st) != nil {
		return ""
	}
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return ""
	}
	dev := uint64(st.Dev)
	major := (dev>>8)&0xfff | (dev>>32)&^uint64(0xfff)
	minor := dev&0xff | (dev>>12)&^uint64(0xff)
	id := fmt.Sprintf("%02x:%02x:%d", major, minor, st.Ino)
	var by []string
	for _, line := range strings.Split(string(data), "\n") {
		// "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
		fields := strings.Fields(line)
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[5] != id {
			continue
		}
		pid, err := strconv.Atoi(fields[4])
		if err != nil || pid <= 0 {
			continue
		}
		who := "pid " + fields[4]
		if uid, ok := safefile.Owner("/proc/" + fields[4]); ok {
			who += " (uid " + strconv.Itoa(uid) + ")"
		}
		by = append(by, who)
	}
	if len(by) == 0 {
		return ""
	}
	return " by " + strings.Join(by, ", ")
}

// removeIfStale removes path when it is a socket nobody answers on.
func removeIfStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("control socket %s: %w", path, err)
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("%w: %s", ErrNotSocket, path)
	}
	c, err := net.DialTimeout("unix", path, staleDialTimeout)
	if err == nil {
		c.Close()
		return fmt.Errorf("%w: %s", ErrInUse, path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		// A timeout may be a busy live server: never remove on a guess.
		return fmt.Errorf("control socket %s exists and could not be checked (only a refused connection proves it stale): %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing stale control socket %s: %w", path, err)
	}
	return nil
}

// bindPrivate binds under umask 077, so the socket is never reachable by
// others even for the instant before chmod.
func bindPrivate(path string) (*net.UnixListener, error) {
	umaskMu.Lock()
	old := syscall.Umask(0o077)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	umaskMu.Unlock()
	return ln, err
}

// remove unlinks the socket if the path is still this server's inode: a
// newer server may have replaced a socket it judged stale.
func (sf *socketFile) remove() error {
	unlock, err := sf.lock()
	if err != nil {
		return err
	}
	defer unlock()
	var st syscall.Stat_t
	if err := syscall.Lstat(sf.path, &st); err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return nil
		}
		return fmt.Errorf("control socket %s: %w", sf.path, err)
	}
	if uint64(st.Dev) != sf.dev || uint64(st.Ino) != sf.ino {
		return nil
	}
	if err := os.Remove(sf.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing control socket %s: %w", sf.path, err)
	}
	return nil
}
