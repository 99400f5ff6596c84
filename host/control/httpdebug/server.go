package httpdebug

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/host/connlimit"
)

// Config configures the adapter. Addr and exactly one of Run and Stable are
// required; every other zero value is usable.
type Config struct {
	// Addr is the --http-debug address: host:port, :port or
	// localhost:port; it must bind to a loopback interface (see
	// LoopbackAddr). Port 0 picks a free port; Server.URL says which.
	Addr string
	// Run is the one-shot run to serve (`avenor run`). Conflicts with
	// Stable.
	Run Target
	// RunID is the one-shot run's id: /events?runtime_id= accepts it (or
	// nothing) and answers 404 for any other. Default: only nothing.
	RunID string
	// Stable is the supervisor to serve (`avenor stable`); it turns on the
	// stable routes. Conflicts with Run.
	Stable Supervisor
	// TokenFile, when set, is written 0600 with the token and a newline
	// before the listening line is printed, for scripts (they cannot read a
	// terminal); it is removed at Close if it still holds the token.
	// Default: none.
	TokenFile string
	// Stderr gets "avenor: http debug listening on <url>" and, with
	// ShowToken, "avenor: http debug token: <token>". Default: nowhere.
	Stderr io.Writer
	// ShowToken prints the token on Stderr. Set it only when Stderr is a
	// terminal (docs/control-protocol.md#http-debug): a log file must not hold it. Default false.
	ShowToken bool
	// Resolver resolves a host name in Addr; default net.DefaultResolver.
	Resolver Resolver
	// Logger receives refused requests and stream failures; default none.
	Logger hclog.Logger
}

// Bounds of the adapter's connections (an idle or refused peer
// must not hold a descriptor the owner needs).
const (
	// ReadHeaderTimeout bounds a request's headers, so a peer cannot hold a
	// connection open without asking anything.
	ReadHeaderTimeout = 10 * time.Second
	// IdleTimeout closes a keep-alive connection that has sent no new
	// request for this long.
	IdleTimeout = 30 * time.Second
	// MaxConnections bounds the open connections of the adapter: a human's
	// browser (six per host) and curl, a script and a few event streams fit
	// many times over. A connection over the cap is answered 503 and closed
	// before any request is read.
	MaxConnections = 32
)

// idleTimeout is IdleTimeout; tests shorten it.
var idleTimeout = IdleTimeout

// Server is a running adapter.
type Server struct {
	cfg   Config
	log   hclog.Logger
	token string

	hs        *http.Server
	url       string
	quit      chan struct{} // closed by Close: streams stop
	serveDone chan struct{}
	closeOnce sync.Once

	mu     sync.Mutex
	closed bool
	active sync.WaitGroup // requests being handled
}

// newServer validates cfg and makes the server and its token, without
// binding.
func newServer(cfg Config) (*Server, error) {
	if (cfg.Run == nil) == (cfg.Stable == nil) {
		return nil, ErrNoTarget
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, token: newToken(), quit: make(chan struct{}), serveDone: make(chan struct{})}
	s.hs = &http.Server{Handler: http.HandlerFunc(s.serveHTTP), ReadHeaderTimeout: ReadHeaderTimeout, IdleTimeout: idleTimeout,
		ErrorLog: cfg.Logger.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})}
	return s, nil
}

// Start checks the address (a non-loopback one is refused: see
// LoopbackAddr), binds it, writes the token file, prints the listening
// line (and the token when asked) and serves until Close or Shutdown.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	s, err := newServer(cfg)
	if err != nil {
		return nil, err
	}
	cfg = s.cfg // with defaults
	addr, err := LoopbackAddr(ctx, cfg.Addr, cfg.Resolver)
	if err != nil {
		return nil, err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("address %q: %w", cfg.Addr, err)
	}
	if cfg.TokenFile != "" {
		if err := writeTokenFile(cfg.TokenFile, s.token); err != nil {
			ln.Close()
			return nil, err
		}
	}
	s.url = "http://" + ln.Addr().String()
	// One over the cap is answered 503 and closed at once rather than left
	// waiting in the backlog.
	capped := connlimit.Wrap(ln, connlimit.Config{Max: MaxConnections, What: "http debug", Limit: "httpdebug.MaxConnections", Log: s.log})
	go func() {
		defer close(s.serveDone)
		if err := s.hs.Serve(capped); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http debug server stopped", "error", err)
		}
	}()
	fmt.Fprintf(cfg.Stderr, "avenor: http debug listening on %s\n", s.url)
	if cfg.ShowToken {
		fmt.Fprintf(cfg.Stderr, "avenor: http debug token: %s\n", s.token)
	}
	return s, nil
}

// URL is the bound address, e.g. http://127.0.0.1:41234.
func (s *Server) URL() string { return s.url }

// Token is the token every request must carry.
func (s *Server) Token() string { return s.token }

// Shutdown stops accepting and lets the open requests finish — an event
// stream finishes when its target's stream ends (TableTarget.End) — until ctx
// ends; then it closes whatever is left, as Close.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.hs.Shutdown(ctx)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close stops the server at once: open streams end, connections close. It
// waits for every request handler, then removes the token file if it still
// holds the token. It is idempotent.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.quit)
		err = s.hs.Close()
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.active.Wait()
		if s.url != "" {
			<-s.serveDone
		}
		if s.cfg.TokenFile != "" {
			if rerr := removeTokenFile(s.cfg.TokenFile, s.token); rerr != nil && err == nil {
				err = fmt.Errorf("http debug token file: %w", rerr)
			}
		}
	})
	return err
}

// enter counts a request in; false once Close has begun waiting.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.active.Add(1)
	return true
}

// serveHTTP checks the peer (403), then the Host header (421), then the
// token (401), then routes. A refused request closes its connection.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		refuse(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	defer s.active.Done()
	if !loopbackPeer(r.RemoteAddr) {
		s.log.Warn("refused an http debug request from a non-loopback peer", "peer", r.RemoteAddr, "path", r.URL.Path)
		refuse(w, http.StatusForbidden, msgForbidden)
		return
	}
	// A page of attacker.example whose name was rebound to 127.0.0.1 passes
	// the peer check; its Host header still names attacker.example.
	if !loopbackHost(r.Host) {
		s.log.Warn("refused an http debug request whose Host header is not loopback", "host", r.Host, "path", r.URL.Path)
		refuse(w, http.StatusMisdirectedRequest, fmt.Sprintf(
			"misdirected request: the Host header %q is not a loopback address; use %s (or localhost, or [::1], with its port)", r.Host, s.urlOr("http://127.0.0.1:<port>")))
		return
	}
	if !tokenMatches(requestToken(r), s.token) {
		s.log.Debug("http debug request without the right token", "peer", r.RemoteAddr, "path", r.URL.Path)
		refuse(w, http.StatusUnauthorized, msgUnauthorized)
		return
	}
	s.route(w, r)
}

// urlOr is the bound URL, or def when the server is not bound (tests).
func (s *Server) urlOr(def string) string {
	if s.url == "" {
		return def
	}
	return s.url
}
