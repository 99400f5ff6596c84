package board

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// bindPolicy is what Start decided about the address: where to listen and
// which Host headers name it.
type bindPolicy struct {
	listen   string // host:port for net.Listen
	loopback bool   // every address the host names is a loopback one
	// host is the host part the user gave (lower case), accepted in Host
	// headers beside the loopback names when the bind is not loopback.
	host string
	// any: bound to every interface (0.0.0.0, ::); any Host is accepted,
	// the token being the guard.
	any bool
}

// resolveBind checks addr: a loopback address always; any other only when
// the API is guarded (a token) or the user said --no-auth.
func resolveBind(ctx context.Context, addr string, guarded bool) (bindPolicy, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return bindPolicy{}, fmt.Errorf("--addr %q is not host:port (e.g. 127.0.0.1:0): %v", addr, err)
	}
	p := bindPolicy{host: strings.ToLower(host)}
	switch {
	case host == "" || strings.EqualFold(host, "localhost"):
		p.listen, p.loopback = net.JoinHostPort("127.0.0.1", port), true
		return p, nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		p.listen, p.loopback, p.any = net.JoinHostPort(ip.String(), port), ip.IsLoopback(), ip.IsUnspecified()
	} else {
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil || len(ips) == 0 {
			return bindPolicy{}, fmt.Errorf("--addr %q: cannot resolve %s: %v", addr, host, err)
		}
		p.loopback = true
		for _, ip := range ips {
			p.loopback = p.loopback && ip.Unmap().IsLoopback()
		}
		// The first address is bound, so the check and the bind agree.
		p.listen = net.JoinHostPort(ips[0].Unmap().String(), port)
	}
	if !p.loopback && !guarded {
		return bindPolicy{}, fmt.Errorf("--addr %q is not a loopback address: a board reachable from other machines needs --token (or --no-auth on a trusted network)", addr)
	}
	return p, nil
}

// hostAllowed says whether a request's Host header names this board: a
// loopback name or IP (with any numeric port), or, when the user bound a
// non-loopback address, that address. A loopback board refuses every other
// name, which defeats DNS rebinding.
func (p bindPolicy) hostAllowed(hostport string) bool {
	h := hostport
	if hh, port, err := net.SplitHostPort(hostport); err == nil {
		if strings.Trim(port, "0123456789") != "" {
			return false
		}
		h = hh
	} else if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	if h == "" {
		return false
	}
	if strings.EqualFold(h, "localhost") {
		return true
	}
	if ip, err := netip.ParseAddr(h); err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback() {
		return true
	}
	if p.loopback {
		return false
	}
	return p.any || strings.EqualFold(h, p.host)
}

// originAllowed says whether a browser's Origin header may call the API:
// absent (not a browser, or a same-origin GET), or an http origin whose
// host is the request's own Host. A page on another site — even another
// port of localhost — is refused.
func (p bindPolicy) originAllowed(origin, host string) bool {
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" || u.Path != "" || u.User != nil {
		return false
	}
	return strings.EqualFold(u.Host, host) && p.hostAllowed(u.Host)
}
