package runtime

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// More sandbox networks (docs/sandbox.md#network): both send what the
// runtime reaches through the host's filtering proxy.
const (
	// SandboxNetworkModel allows only the runtime's own model endpoints,
	// as its plugin reports them (CapSandboxNetworkModel).
	SandboxNetworkModel = "model"
	// SandboxNetworkAllowPrefix starts an allow-list:
	// allow=host[:port],… — each entry a host (any port), a host and a
	// port, or :port (any host at that port).
	SandboxNetworkAllowPrefix = "allow="
)

// MaxNetworkAllow bounds the entries of --sandbox-network allow=…
// (docs/configuration.md#bounds).
const MaxNetworkAllow = 64

// maxNetworkHostLen is the longest host name an entry may give (DNS's).
const maxNetworkHostLen = 253

// CapSandboxNetworkModel is the capability row saying that a backend's
// plugin reports its runtime's model endpoints (OpenResult's
// ModelEndpoints), so that --sandbox-network model can allow them.
// Absent, model is refused for the backend before anything starts.
const CapSandboxNetworkModel Capability = "sandbox_network_model"

// NetDest is one allowed destination: Host "" is any host, Port 0 any
// port. Host is a lower-case name or an IP address without brackets.
type NetDest struct {
	Host string
	Port int
}

// String is d as an allow= entry takes it.
func (d NetDest) String() string {
	switch {
	case d.Port == 0:
		return bracket(d.Host)
	case d.Host == "":
		return ":" + strconv.Itoa(d.Port)
	}
	return net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
}

// Allows reports whether d lets a connection to host:port through; host
// is compared without case and brackets.
func (d NetDest) Allows(host string, port int) bool {
	host = strings.ToLower(strings.Trim(host, "[]"))
	return (d.Host == "" || d.Host == host) && (d.Port == 0 || d.Port == port)
}

// Loopback reports whether d names a loopback address (or localhost).
func (d NetDest) Loopback() bool {
	if d.Host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(d.Host)
	return err == nil && a.IsLoopback()
}

// bracket is host as an address shows it: an IPv6 one in brackets.
func bracket(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// NetProfile is a parsed --sandbox-network: Kind is host, none, model or
// "allow" (with Allow its entries).
type NetProfile struct {
	Kind  string
	Allow []NetDest
}

// String is p as --sandbox-network takes it: the canonical form.
func (p NetProfile) String() string {
	if p.Kind != "allow" {
		return p.Kind
	}
	parts := make([]string, len(p.Allow))
	for i, d := range p.Allow {
		parts[i] = d.String()
	}
	return SandboxNetworkAllowPrefix + strings.Join(parts, ",")
}

// Filtered reports whether p sends the runtime's traffic through the
// proxy: model or an allow-list.
func (p NetProfile) Filtered() bool { return p.Kind == SandboxNetworkModel || p.Kind == "allow" }

// errNetworkHint ends every --sandbox-network error.
const errNetworkHint = "valid: host, none, model, allow=host[:port],… (e.g. allow=api.example.com:443,:8080)"

// ParseNetProfile checks a --sandbox-network value ("" is host): host,
// none, model or allow= with 1 to MaxNetworkAllow comma-separated
// entries, each host, host:port, [v6]:port or :port, the port 1-65535.
// A repeated entry is kept once.
func ParseNetProfile(v string) (NetProfile, error) {
	switch v {
	case "", SandboxNetworkHost:
		return NetProfile{Kind: SandboxNetworkHost}, nil
	case SandboxNetworkNone, SandboxNetworkModel:
		return NetProfile{Kind: v}, nil
	}
	list, ok := strings.CutPrefix(v, SandboxNetworkAllowPrefix)
	if !ok {
		return NetProfile{}, fmt.Errorf("invalid sandbox network %q; %s", v, errNetworkHint)
	}
	if strings.TrimSpace(list) == "" {
		return NetProfile{}, fmt.Errorf("sandbox network %q allows nothing; name at least one host[:port], or use none", v)
	}
	entries := strings.Split(list, ",")
	if len(entries) > MaxNetworkAllow {
		return NetProfile{}, fmt.Errorf("sandbox network allow-list: %d entries is over the limit of %d", len(entries), MaxNetworkAllow)
	}
	p := NetProfile{Kind: "allow"}
	for _, e := range entries {
		d, err := parseNetDest(strings.TrimSpace(e))
		if err != nil {
			return NetProfile{}, fmt.Errorf("sandbox network allow-list entry %q: %w; %s", e, err, errNetworkHint)
		}
		if !containsDest(p.Allow, d) {
			p.Allow = append(p.Allow, d)
		}
	}
	return p, nil
}

func containsDest(ds []NetDest, d NetDest) bool {
	for _, x := range ds {
		if x == d {
			return true
		}
	}
	return false
}

// ModelEndpointReporter is an optional Session extension of a backend
// that declares CapSandboxNetworkModel: the host:port destinations its
// runtime's model requests go to (from the runtime's configuration), each
// naming a host and a port. --sandbox-network model allows those and
// nothing else; none reported, it allows nothing.
type ModelEndpointReporter interface {
	ModelEndpoints() []NetDest
}

// ParseNetDest reads one allow= entry: host, host:port, [v6]:port or
// :port.
func ParseNetDest(e string) (NetDest, error) { return parseNetDest(strings.TrimSpace(e)) }

// EndpointOfURL is the host:port a model base URL (http or https) is
// reached at, its default port filled in.
func EndpointOfURL(raw string) (NetDest, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return NetDest{}, err
	}
	port := u.Port()
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return NetDest{}, fmt.Errorf("model URL %q: not http or https", raw)
	case u.Hostname() == "":
		return NetDest{}, fmt.Errorf("model URL %q: no host", raw)
	case port == "" && u.Scheme == "https":
		port = "443"
	case port == "":
		port = "80"
	}
	d, err := destOf(u.Hostname(), port, strings.Contains(u.Hostname(), ":"))
	if err != nil {
		return NetDest{}, fmt.Errorf("model URL %q: %w", raw, err)
	}
	return d, nil
}

// parseNetDest reads one allow= entry.
func parseNetDest(e string) (NetDest, error) {
	if e == "" {
		return NetDest{}, errors.New("empty entry")
	}
	host, portStr := e, ""
	switch {
	case strings.HasPrefix(e, "["):
		end := strings.Index(e, "]")
		if end < 0 {
			return NetDest{}, errors.New("unclosed [ in an IPv6 address")
		}
		host, rest := e[1:end], e[end+1:]
		if rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return NetDest{}, errors.New("text after ] that is not :port")
			}
			portStr = p
			if portStr == "" {
				return NetDest{}, errors.New("empty port after ':'")
			}
		}
		return destOf(host, portStr, true)
	case strings.Count(e, ":") > 1:
		return NetDest{}, errors.New("an IPv6 address must be in brackets: [::1]:8080")
	case strings.Contains(e, ":"):
		host, portStr, _ = strings.Cut(e, ":")
		if portStr == "" {
			return NetDest{}, errors.New("empty port after ':'")
		}
	}
	return destOf(host, portStr, false)
}

// destOf checks host and port; v6 says the host was bracketed.
func destOf(host, portStr string, v6 bool) (NetDest, error) {
	d := NetDest{Host: strings.ToLower(host)}
	if portStr != "" {
		n, err := strconv.Atoi(portStr)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != portStr {
			return NetDest{}, fmt.Errorf("port %q is not a number from 1 to 65535", portStr)
		}
		d.Port = n
	}
	if v6 {
		a, err := netip.ParseAddr(d.Host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return NetDest{}, fmt.Errorf("%q is not an IPv6 address", host)
		}
		d.Host = a.String()
		return d, nil
	}
	if d.Host == "" {
		if d.Port == 0 {
			return NetDest{}, errors.New("neither host nor port")
		}
		return d, nil
	}
	if a, err := netip.ParseAddr(d.Host); err == nil {
		d.Host = a.String()
		return d, nil
	}
	if !validHostName(d.Host) {
		return NetDest{}, fmt.Errorf("%q is not a host name or IP address", host)
	}
	return d, nil
}

// validHostName reports whether h is a DNS name: dot-separated labels of
// letters, digits and hyphens, 1-63 bytes each, no hyphen at either end.
func validHostName(h string) bool {
	if len(h) > maxNetworkHostLen {
		return false
	}
	for _, l := range strings.Split(h, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
