package mcpserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/avenor-go/avenor/host/connlimit"
)

// Bounds of the HTTP transport.
const (
	// ReadHeaderTimeout is the time a client has to send a request's
	// headers.
	ReadHeaderTimeout = 10 * time.Second
	// MaxHTTPBody bounds one request body (a tool call's JSON-RPC message).
	MaxHTTPBody = 4 << 20
	// MaxHTTPConnections bounds the connections open at once, counted
	// before any request is read or any token checked (host/connlimit):
	// one more is answered 503 and closed. MaxHTTPConnectionsPerPeer
	// bounds those of one other local user (loopback, where the kernel
	// tells the uid), and the last ReservedHTTPConnections are kept for the
	// user who started avenor mcp, so a flood never locks the owner out.
	MaxHTTPConnections        = 64
	MaxHTTPConnectionsPerPeer = 16
	ReservedHTTPConnections   = 8
	// HTTPIdleTimeout closes a keep-alive connection without a new
	// request.
	HTTPIdleTimeout = 30 * time.Second
	// HTTPShutdownWait bounds how long a stopping HTTP transport waits for
	// the requests in flight.
	HTTPShutdownWait = 5 * time.Second
)

// ErrHTTPToken is the HTTP transport without a token (the original's
// message, with the token file this avenor also reads).
var ErrHTTPToken = errors.New("--transport http requires MCP_AUTH_TOKEN, --auth-token, or --auth-token-file")

// HTTPToken is the HTTP transport's bearer token from `avenor mcp`'s
// flags: token (--auth-token), or the trimmed content of file
// (--auth-token-file; the two are exclusive), else $MCP_AUTH_TOKEN through
// getenv. "" when none is given; Handler then refuses to serve.
func HTTPToken(token, file string, getenv func(string) string) (string, error) {
	if file != "" {
		if token != "" {
			return "", errors.New("--auth-token and --auth-token-file are mutually exclusive: pass one")
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--auth-token-file: %w", err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return "", fmt.Errorf("--auth-token-file %s is empty", file)
		}
	}
	if token == "" && getenv != nil {
		token = strings.TrimSpace(getenv("MCP_AUTH_TOKEN"))
	}
	return token, nil
}

// CheckAllowedHosts refuses an --allowed-host that is not an exact host
// name: the guard compares names, never patterns.
func CheckAllowedHosts(hosts []string) error {
	for _, h := range hosts {
		if h == "" || strings.ContainsAny(h, "*/:<> \t") {
			return fmt.Errorf("--allowed-host %q: give an exact host name (no port, scheme or wildcard)", h)
		}
	}
	return nil
}

// ServeHTTP serves the Streamable HTTP transport (Handler) on addr until
// ctx ends, then stops within HTTPShutdownWait. listening, when set, is
// told the address once the listener is open.
func (s *Server) ServeHTTP(ctx context.Context, addr string, listening func(net.Addr)) error {
	h, err := s.Handler()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", addr, err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: ReadHeaderTimeout, IdleTimeout: HTTPIdleTimeout}
	if listening != nil {
		listening(ln.Addr())
	}
	errc := make(chan error, 1)
	capped := connlimit.Wrap(ln, connlimit.Config{
		Max: MaxHTTPConnections, MaxPerPeer: MaxHTTPConnectionsPerPeer, Reserve: ReservedHTTPConnections,
		What: "mcp http", Limit: "mcpserver.MaxHTTPConnections", PeerLimit: "mcpserver.MaxHTTPConnectionsPerPeer",
	})
	go func() { errc <- hs.Serve(capped) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), HTTPShutdownWait)
	defer cancel()
	_ = hs.Shutdown(sctx)
	<-errc
	return nil
}

// guard serves next only to requests that name a loopback (or allow-listed)
// Host, come from no browser Origin or a loopback (or allow-listed) one —
// a web page the user visits must not reach the server by DNS rebinding or
// a cross-site request — and carry the bearer token. The token is compared
// in constant time and never logged; a 401 says WWW-Authenticate: Bearer.
func guard(next http.Handler, token string, allowed []string) http.Handler {
	want := []byte(token)
	allow := map[string]bool{}
	for _, h := range allowed {
		allow[asciiLower(h)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r.Host, allow) {
			http.Error(w, "forbidden: the Host header must name a loopback address (127.0.0.1, ::1, localhost) or an --allowed-host", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !originAllowed(o, allow) {
			http.Error(w, "forbidden: requests from a browser origin other than loopback or an --allowed-host are refused", http.StatusForbidden)
			return
		}
		got, ok := bearer(r.Header.Get("Authorization"))
		if !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized: send Authorization: Bearer <the --auth-token / MCP_AUTH_TOKEN of avenor mcp>", http.StatusUnauthorized)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxHTTPBody)
		next.ServeHTTP(w, r)
	})
}

// bearer reads "Bearer <token>" (the scheme is case-insensitive).
func bearer(h string) (string, bool) {
	const scheme = "bearer "
	if len(h) <= len(scheme) || asciiLower(h[:len(scheme)]) != scheme {
		return "", false
	}
	t := strings.TrimSpace(h[len(scheme):])
	return t, t != ""
}

func hostAllowed(hostport string, allow map[string]bool) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return nameAllowed(strings.Trim(host, "[]"), allow)
}

func originAllowed(origin string, allow map[string]bool) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return nameAllowed(u.Hostname(), allow)
}

// nameAllowed: loopback names and addresses, or an allow-listed name. The
// comparison is ASCII only: a Unicode look-alike never matches.
func nameAllowed(host string, allow map[string]bool) bool {
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 {
			return false
		}
	}
	h := asciiLower(host)
	if h == "localhost" || allow[h] {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
