package client

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"github.com/avenor-go/avenor/internal/peercred"
)

// EnvTrustRoot, set to 1, lets a client accept a control socket served by
// root (uid 0) as well as by its own user: a harness that is not root but
// talks to a supervisor an administrator runs. Without it, only the
// client's own uid is trusted. A root client always trusts root (it is its
// own uid).
const EnvTrustRoot = "AVENOR_CONTROL_TRUST_ROOT"

// ErrUntrustedSocket: the control socket, or the process serving it,
// belongs to another user. Nothing was sent on the connection.
var ErrUntrustedSocket = errors.New("control socket belongs to another user")

// errNoPeerCred: the platform cannot tell who serves a socket; the
// socket file's owner is then all that is checked.
var errNoPeerCred = peercred.ErrUnavailable

// trust is who a client accepts at the other end of a control socket.
type trust struct {
	uid       int  // the client's effective uid
	trustRoot bool // root is accepted too
}

func defaultTrust() trust {
	return trust{uid: os.Geteuid(), trustRoot: os.Getenv(EnvTrustRoot) == "1"}
}

func (t trust) accepts(uid int) bool {
	return uid == t.uid || (uid == 0 && t.trustRoot)
}

// checkOwner refuses a socket file (after symlinks) owned by a user the
// client does not trust. It runs before the dial: a squatter's socket is
// never connected to.
func (t trust) checkOwner(path string) error {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return nil // the dial says what is wrong with the path
	}
	if uid := int(st.Uid); !t.accepts(uid) {
		return fmt.Errorf("%w: %s is owned by %s, not by this user (uid %d)%s; nothing was sent. "+
			"Another user may have created it to read what you send: remove it (as its owner or root) and use a socket in a directory only you can write, e.g. $XDG_RUNTIME_DIR",
			ErrUntrustedSocket, path, who(uid), t.uid, t.rootHint(uid))
	}
	return nil
}

// checkPeer refuses a connection whose server runs as a user the client
// does not trust (SO_PEERCRED). It runs before anything is written.
func (t trust) checkPeer(nc net.Conn, path string, peer func(*net.UnixConn) (uid, pid int, err error)) error {
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		return nil
	}
	uid, pid, err := peer(uc)
	if errors.Is(err, errNoPeerCred) {
		return nil // checkOwner stood guard
	}
	if err != nil {
		return fmt.Errorf("control socket %s: reading the server's credentials: %w; nothing was sent", path, err)
	}
	if !t.accepts(uid) {
		return fmt.Errorf("%w: %s is served by pid %d of %s, not by this user (uid %d)%s; nothing was sent. "+
			"Another user may be listening there to read what you send: stop that process (as its owner or root) and use a socket in a directory only you can write, e.g. $XDG_RUNTIME_DIR",
			ErrUntrustedSocket, path, pid, who(uid), t.uid, t.rootHint(uid))
	}
	return nil
}

// rootHint tells a non-root client refusing root how to accept it.
func (t trust) rootHint(uid int) string {
	if uid == 0 && !t.trustRoot {
		return " (set " + EnvTrustRoot + "=1 to accept a supervisor run by root)"
	}
	return ""
}

// who names a uid: "uid 65534 (nobody)", or "uid N" when unknown.
func who(uid int) string {
	s := "uid " + strconv.Itoa(uid)
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		s += " (" + u.Username + ")"
	}
	return s
}
