package httpdebug

import (
	"context"
	"net"
	"net/netip"
	"strings"
)

// Resolver resolves a host name of the address; *net.Resolver implements it.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// ipv4Loopback is where `:port` and `localhost` bind (docs/control-protocol.md#http-debug).
var ipv4Loopback = netip.MustParseAddr("127.0.0.1")

// LoopbackAddr turns an --http-debug address into the host:port to bind,
// refusing anything that does not bind to a loopback interface (contract
// docs/control-protocol.md#http-debug): `:port` and `localhost:port` bind 127.0.0.1; a numeric host must be
// loopback; any other host name is resolved with r and every address it
// resolves to must be loopback, and the first is bound, so a name cannot
// resolve differently between the check and the bind.
func LoopbackAddr(ctx context.Context, addr string, r Resolver) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", &addrError{addr: addr, reason: ErrBadAddress}
	}
	var ip netip.Addr
	switch {
	case host == "" || strings.EqualFold(host, "localhost"):
		ip = ipv4Loopback
	default:
		if ip, err = netip.ParseAddr(host); err == nil {
			if ip = ip.Unmap(); !ip.IsLoopback() {
				return "", &addrError{addr: addr, reason: ErrNotLoopback}
			}
			break
		}
		if r == nil {
			r = net.DefaultResolver
		}
		ips, err := r.LookupIPAddr(ctx, host)
		if err != nil {
			return "", &addrError{addr: addr, reason: ErrNotLoopback, detail: "resolving " + host + ": " + err.Error()}
		}
		if len(ips) == 0 {
			return "", &addrError{addr: addr, reason: ErrNotLoopback}
		}
		// The message stays the contract's exact text: the address named in
		// it is the one the user gave.
		for i, a := range ips {
			got, ok := netip.AddrFromSlice(a.IP)
			if !ok || !got.Unmap().IsLoopback() {
				return "", &addrError{addr: addr, reason: ErrNotLoopback}
			}
			if i == 0 {
				ip = got.Unmap().WithZone(a.Zone)
			}
		}
	}
	return net.JoinHostPort(ip.String(), port), nil
}

// loopbackPeer says whether a request's RemoteAddr is a loopback peer.
func loopbackPeer(remote string) bool {
	ap, err := netip.ParseAddrPort(remote)
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// loopbackHost says whether a request's Host header names a loopback
// address: localhost or a loopback IP, with or without a numeric port.
func loopbackHost(host string) bool {
	h, port, err := net.SplitHostPort(host)
	switch {
	case err == nil:
		for _, c := range port {
			if c < '0' || c > '9' {
				return false
			}
		}
	case strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]"):
		h = host[1 : len(host)-1]
	case !strings.Contains(host, ":"):
		h = host
	default:
		return false
	}
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback()
}
