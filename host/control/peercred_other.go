//go:build !linux

package control

import "net"

func peerCred(*net.UnixConn) (uid, pid int, err error) { return -1, 0, errNoPeerCred }
