package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/avenor-go/avenor/sdk/agentproc"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Bounds of the filtering proxy (docs/configuration.md#bounds).
const (
	// MaxProxyConnections bounds the connections one runtime's proxy
	// serves at once; one more is closed unanswered.
	MaxProxyConnections = 256
	// MaxProxyHeaderBytes bounds a request's line and headers.
	MaxProxyHeaderBytes = 64 << 10
	// ProxyHeaderTimeout is the time a connection has to send its request.
	ProxyHeaderTimeout = 30 * time.Second
	// ProxyDialTimeout bounds dialling an allowed destination.
	ProxyDialTimeout = 30 * time.Second
)

// OpConnect: a connection to a destination the network profile does not
// allow (avenor.sandbox.denied's op, with destination host:port).
const OpConnect = "connect"

// ProxySocketName is the proxy's socket in its private directory.
const ProxySocketName = "proxy.sock"

// ProxyConfig is what a runtime's filtering proxy allows and whom it
// tells of a refusal. The zero value allows nothing.
type ProxyConfig struct {
	// Allow are the destinations let through; nothing else is.
	Allow []sdk.NetDest
	// OnDeny is called with host:port of each refused connection, from
	// the connection's goroutine; nil reports nothing. The caller
	// deduplicates and bounds what it writes.
	OnDeny func(destination string)
	// Dial connects to an allowed destination; nil is a net.Dialer's.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Pending: the allow-list is not known yet (--sandbox-network model:
	// the plugin reports its runtime's endpoints once it opened the
	// session) and comes with SetAllow; until then a connection waits for
	// it, at most ProxyHeaderTimeout, and is refused if it does not come.
	Pending bool
}

// Proxy is the host's filtering proxy of one sandboxed runtime
// (docs/sandbox.md#network): an HTTP proxy on a Unix socket in a
// private directory (0700) that takes CONNECT and absolute-form http://
// requests and lets through only the destinations of its allow-list. The
// forwarder inside the sandbox relays the runtime's connections to it.
type Proxy struct {
	cfg ProxyConfig
	dir string
	ln  net.Listener

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	// allow is cfg.Allow, or what SetAllow set; ready is closed once it
	// is known.
	allow     []sdk.NetDest
	ready     chan struct{}
	readyOnce sync.Once
}

// StartProxy starts a proxy for cfg on a socket in a new private
// directory under the system's temp dir; Close stops it and removes the
// directory.
func StartProxy(cfg ProxyConfig) (*Proxy, error) {
	dir, err := os.MkdirTemp("", "avenor-net-")
	if err != nil {
		return nil, fmt.Errorf("sandbox network proxy: creating its private directory: %w", err)
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	ln, err := net.Listen("unix", filepath.Join(dir, ProxySocketName))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("sandbox network proxy: %w", err)
	}
	if cfg.Dial == nil {
		d := &net.Dialer{Timeout: ProxyDialTimeout}
		cfg.Dial = d.DialContext
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{cfg: cfg, dir: dir, ln: ln, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{},
		allow: cfg.Allow, ready: make(chan struct{})}
	if !cfg.Pending {
		close(p.ready)
	}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Socket is the proxy's Unix socket, absolute.
func (p *Proxy) Socket() string { return filepath.Join(p.dir, ProxySocketName) }

// Close stops the proxy: no new connection, every open one closed, its
// goroutines gone, its directory removed. It is idempotent.
func (p *Proxy) Close() error {
	p.cancel()
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	_ = os.RemoveAll(p.dir)
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// serve accepts until Close.
func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil {
				return
			}
			time.Sleep(10 * time.Millisecond) // EMFILE and the like: try again
			continue
		}
		if !p.track(c) {
			_ = c.Close()
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			p.handle(c)
		}()
	}
}

// track records c; false when the proxy is closed or full.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx.Err() != nil || len(p.conns) >= MaxProxyConnections {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

// SetAllow sets a Pending proxy's allow-list; the connections waiting
// for it are judged by it. Only the first call counts.
func (p *Proxy) SetAllow(allow []sdk.NetDest) {
	p.readyOnce.Do(func() {
		p.mu.Lock()
		p.allow = append([]sdk.NetDest(nil), allow...)
		p.mu.Unlock()
		if p.cfg.Pending {
			close(p.ready)
		}
	})
}

// allowed reports whether the profile lets host:port through; a Pending
// proxy waits for its allow-list first.
func (p *Proxy) allowed(host string, port int) bool {
	t := time.NewTimer(ProxyHeaderTimeout)
	defer t.Stop()
	select {
	case <-p.ready:
	case <-t.C:
		return false
	case <-p.ctx.Done():
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range p.allow {
		if d.Allows(host, port) {
			return true
		}
	}
	return false
}

// handle serves one connection: one request, then a tunnel (CONNECT) or
// one response (absolute-form), then it is closed.
func (p *Proxy) handle(c net.Conn) {
	lr := &io.LimitedReader{R: c, N: MaxProxyHeaderBytes}
	br := bufio.NewReader(lr)
	_ = c.SetReadDeadline(time.Now().Add(ProxyHeaderTimeout))
	req, err := http.ReadRequest(br)
	if err != nil {
		reply(c, http.StatusBadRequest, "avenor sandbox proxy: unreadable request: "+err.Error())
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	lr.N = math.MaxInt64
	host, port, err := destination(req)
	if err != nil {
		reply(c, http.StatusBadRequest, "avenor sandbox proxy: "+err.Error())
		return
	}
	dest := net.JoinHostPort(host, strconv.Itoa(port))
	if !p.allowed(host, port) {
		if p.cfg.OnDeny != nil {
			p.cfg.OnDeny(dest)
		}
		reply(c, http.StatusForbidden, "avenor sandbox: the connection to "+dest+" is not allowed by --sandbox-network")
		return
	}
	dst, err := p.cfg.Dial(p.ctx, "tcp", dest)
	if err != nil {
		reply(c, http.StatusBadGateway, "avenor sandbox proxy: "+err.Error())
		return
	}
	if !p.track(dst) {
		_ = dst.Close()
		return
	}
	defer p.untrack(dst)
	if req.Method == http.MethodConnect {
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		agentproc.Splice(c, br, dst, dst)
		return
	}
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	req.Close = true
	if err := req.Write(dst); err != nil {
		return
	}
	// One request per connection (RelayResponse marks the answer so).
	if err := agentproc.RelayResponse(c, dst, req); err != nil {
		reply(c, http.StatusBadGateway, "avenor sandbox proxy: "+err.Error())
	}
}

// destination is the host and port a request asks for: CONNECT's
// authority, or an absolute http:// URL's (port 80 when it names none).
func destination(req *http.Request) (string, int, error) {
	hostport := req.Host
	if req.Method != http.MethodConnect {
		if !req.URL.IsAbs() || req.URL.Scheme != "http" {
			return "", 0, fmt.Errorf("%s %s: only CONNECT and absolute http:// requests are proxied", req.Method, req.RequestURI)
		}
		hostport = req.URL.Host
		if req.URL.Port() == "" {
			hostport = net.JoinHostPort(req.URL.Hostname(), "80")
		}
	}
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", 0, fmt.Errorf("destination %q: %w", hostport, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 || host == "" {
		return "", 0, fmt.Errorf("destination %q: not host:port", hostport)
	}
	return host, port, nil
}

// reply writes a short plain-text response and nothing more.
func reply(c net.Conn, code int, msg string) {
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(msg)+1, msg+"\n")
}
