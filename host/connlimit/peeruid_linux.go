//go:build linux

package connlimit

import (
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// PeerUID is the uid owning the other end of c, when the kernel tells it:
// a TCP peer on this host, found with one NETLINK_SOCK_DIAG query for the
// peer socket's exact address pair. false for a remote peer or when the
// query fails.
func PeerUID(c net.Conn) (int, bool) {
	local, ok1 := c.LocalAddr().(*net.TCPAddr)
	remote, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0, false
	}
	src, _ := netip.AddrFromSlice(remote.IP)
	dst, _ := netip.AddrFromSlice(local.IP)
	src, dst = src.Unmap(), dst.Unmap()
	if !src.IsLoopback() && src != dst {
		return 0, false // the peer socket is on another host
	}
	// The peer's socket: its source is our remote, its destination us.
	return sockDiagUID(src, uint16(remote.Port), dst, uint16(local.Port))
}

// inet_diag_req_v2 and inet_diag_msg (linux/inet_diag.h).
const (
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
	reqLen           = 56 // sizeof(struct inet_diag_req_v2)
	msgUIDOffset     = 64 // offsetof(struct inet_diag_msg, idiag_uid)
)

func sockDiagUID(src netip.Addr, sport uint16, dst netip.Addr, dport uint16) (int, bool) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)

	family := uint8(unix.AF_INET)
	if src.Is6() {
		family = unix.AF_INET6
	}
	req := make([]byte, unix.NLMSG_HDRLEN+reqLen)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], sockDiagByFamily)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1) // seq
	b := req[unix.NLMSG_HDRLEN:]
	b[0], b[1] = family, unix.IPPROTO_TCP
	ne.PutUint32(b[4:], 0xffffffff) // every state
	id := b[8:]
	binary.BigEndian.PutUint16(id[0:], sport)
	binary.BigEndian.PutUint16(id[2:], dport)
	s16, d16 := src.As16(), dst.As16()
	if family == unix.AF_INET {
		s4, d4 := src.As4(), dst.As4()
		copy(id[4:], s4[:])
		copy(id[20:], d4[:])
	} else {
		copy(id[4:], s16[:])
		copy(id[20:], d16[:])
	}
	// cookie: INET_DIAG_NOCOOKIE, so the address pair alone names it
	ne.PutUint32(id[40:], 0xffffffff)
	ne.PutUint32(id[44:], 0xffffffff)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, false
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil || n < unix.NLMSG_HDRLEN {
		return 0, false
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Type != sockDiagByFamily || len(m.Data) < msgUIDOffset+4 {
			continue
		}
		return int(ne.Uint32(m.Data[msgUIDOffset:])), true
	}
	return 0, false
}
