//go:build !linux

package connlimit

import "net"

// PeerUID cannot tell a peer's uid on this system.
func PeerUID(net.Conn) (int, bool) { return 0, false }
