package peercred

import (
	"net"
	"syscall"
)

// Of returns the uid and pid of the process at the other end of c
// (SO_PEERCRED: the process that connected, or that bound the listening
// socket a client connected to).
func Of(c *net.UnixConn) (uid, pid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, 0, err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return -1, 0, err
	}
	if credErr != nil {
		return -1, 0, credErr
	}
	return int(cred.Uid), int(cred.Pid), nil
}
