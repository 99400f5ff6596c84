package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Default sockets (docs/cli.md#avenor-control). `avenor stable` without
// --control-socket listens on DefaultSocketPath; `avenor control`, `avenor
// await`, `avenor board` and Dial with an empty path use SocketEnv, else
// that default. This file is the one place that decides which socket "no
// socket given" means.
const (
	// SocketEnv names the environment variable that gives the control
	// socket when none is given.
	SocketEnv = "AVENOR_SOCKET"
	// DefaultSocketName is the default socket's file name in SocketDir.
	DefaultSocketName = "default.sock"
)

// ErrNoDefaultSocket: no socket was given, SocketEnv is not set, and there
// is no home directory for the default.
var ErrNoDefaultSocket = errors.New("no control socket: " + SocketEnv + " is not set and $HOME is not set for ~/.avenor/sockets/" + DefaultSocketName + "; pass --socket or set " + SocketEnv)

// SocketDir is <home>/.avenor/sockets: where the default socket lives and
// the directory `avenor board` scans.
func SocketDir(home string) string { return filepath.Join(home, ".avenor", "sockets") }

// DefaultSocketPath is <home>/.avenor/sockets/default.sock.
func DefaultSocketPath(home string) string { return filepath.Join(SocketDir(home), DefaultSocketName) }

// ResolveSocket is the socket a client uses when none is given: SocketEnv
// if it is set and not empty, else DefaultSocketPath of $HOME. getenv is
// os.Getenv, or a test's environment.
func ResolveSocket(getenv func(string) string) (string, error) {
	if p := getenv(SocketEnv); p != "" {
		return p, nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", ErrNoDefaultSocket
	}
	return DefaultSocketPath(home), nil
}

// DialDefault dials ResolveSocket(os.Getenv): the socket of AVENOR_SOCKET,
// else ~/.avenor/sockets/default.sock, where `avenor stable` without
// --control-socket listens.
func DialDefault(ctx context.Context) (*Client, error) {
	path, err := ResolveSocket(os.Getenv)
	if err != nil {
		return nil, err
	}
	c, err := Dial(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("default control socket %s: %w", path, err)
	}
	return c, nil
}

// Errors of PrepareSocketDir.
var (
	ErrSocketDirNotOwned = errors.New("belongs to another user")
	ErrSocketDirShared   = errors.New("is writable by other users")
)

// PrepareSocketDir makes the default socket's directory ready for a server
// to bind in: created 0700 (with its missing parents) when absent; an
// existing one must be a directory of this user that no other user can
// write, else it is refused, because whoever can write it can replace the
// socket a client will trust.
func PrepareSocketDir(dir string) error {
	var st syscall.Stat_t
	err := syscall.Lstat(dir, &st)
	if errors.Is(err, syscall.ENOENT) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("socket directory %s: %w", dir, err)
		}
		// MkdirAll applies the umask: make it exactly 0700.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("socket directory %s: %w", dir, err)
		}
		err = syscall.Lstat(dir, &st)
	}
	if err != nil {
		return fmt.Errorf("socket directory %s: %w", dir, err)
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFDIR:
		return fmt.Errorf("socket directory %s is not a directory (a symlink or a file): remove it", dir)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("socket directory %s %w (uid %d), not this user (uid %d): remove it or pass --control-socket", dir, ErrSocketDirNotOwned, st.Uid, os.Geteuid())
	case st.Mode&0o022 != 0:
		return fmt.Errorf("socket directory %s %w (mode %04o): chmod 700 %s, or pass --control-socket", dir, ErrSocketDirShared, st.Mode&0o7777, dir)
	}
	return nil
}

// DefaultServerSocket is the socket `avenor stable` listens on when none
// is given: DefaultSocketPath of home, its directory made ready
// (PrepareSocketDir).
func DefaultServerSocket(home string) (string, error) {
	if home == "" {
		return "", errors.New("--control-socket is not given and $HOME is not set for ~/.avenor/sockets/default.sock; pass --control-socket")
	}
	if err := PrepareSocketDir(SocketDir(home)); err != nil {
		return "", err
	}
	return DefaultSocketPath(home), nil
}
