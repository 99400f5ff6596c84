package peercred

import (
	"net"

	"golang.org/x/sys/unix"
)

// Of returns the uid of the process at the other end of c
// (LOCAL_PEERCRED) and its pid (LOCAL_PEERPID, 0 when unknown).
func Of(c *net.UnixConn) (uid, pid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, 0, err
	}
	var cred *unix.Xucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		if credErr == nil {
			pid, _ = unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID)
		}
	}); err != nil {
		return -1, 0, err
	}
	if credErr != nil {
		return -1, 0, credErr
	}
	return int(cred.Uid), pid, nil
}
