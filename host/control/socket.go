package control

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// staleDialTimeout bounds the dial that tells a live socket from a stale one
// (contract §5.1).
const staleDialTimeout = 250 * time.Millisecond

// umaskMu serialises the process-wide umask change around bind.
var umaskMu sync.Mutex

// socketFile is a bound control socket and the identity of its inode, so a
// clean stop unlinks only the socket this server made.
type socketFile struct {
	path     string
	lockPath string
	dev, ino uint64
}

// listenSocket binds path as contract §5.1 says: parent directory created
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
	sf := &socketFile{path: path, lockPath: path + ".control.lock"}
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

// lock takes the flock on the lock file; the returned func releases it.
// The lock file stays: removing it would let two processes lock different
// files of the same name.
func (sf *socketFile) lock() (func(), error) {
	f, err := os.OpenFile(sf.lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("control socket lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("control socket lock %s: %w", sf.lockPath, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
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
