package board

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/connlimit"
)

// Errors of Start.
var (
	ErrTokenAndNoAuth = errors.New("--token and --no-auth are mutually exclusive: give a token, or none with --no-auth")
	ErrNoHome         = errors.New("no socket directory: $HOME is not set; pass --scan or --socket")
)

// Server is a running board.
type Server struct {
	cfg    Config
	token  string // "" with NoAuth
	bind   bindPolicy
	scan   []string
	log    hclog.Logger
	ln     net.Listener
	http   *http.Server
	served chan struct{}

	streams chan struct{} // MaxStreams slots

	leftoverMu sync.Mutex
	leftoverAt time.Time // the last cleanLeftovers
	// ctx ends every open stream when the board stops.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start validates cfg, listens and serves until Shutdown.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Token != "" && cfg.NoAuth {
		return nil, ErrTokenAndNoAuth
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.StallAfter <= 0 {
		cfg.StallAfter = DefaultStallAfter
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, token: cfg.Token, streams: make(chan struct{}, MaxStreams), served: make(chan struct{})}
	if s.token == "" && !cfg.NoAuth {
		s.token = newToken()
	}
	var err error
	if s.bind, err = resolveBind(ctx, cfg.Addr, cfg.Token != "" || cfg.NoAuth); err != nil {
		return nil, err
	}
	if cfg.Socket == "" {
		if s.scan, err = scanDirs(cfg.Scan, cfg.Home); err != nil {
			return nil, err
		}
	}
	if s.ln, err = net.Listen("tcp", s.bind.listen); err != nil {
		return nil, fmt.Errorf("--addr %q: %w", cfg.Addr, err)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.http = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		// net/http's own complaints (a bad TLS hello, a broken pipe) name no
		// URL, so they cannot carry the token.
		ErrorLog: log.New(s.log.StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug}), "", 0),
	}
	go func() {
		defer close(s.served)
		_ = s.http.Serve(connlimit.Wrap(s.ln, connlimit.Config{
			Max: MaxConnections, MaxPerPeer: MaxConnectionsPerPeer, Reserve: ReservedConnections,
			What: "board", Limit: "board.MaxConnections", PeerLimit: "board.MaxConnectionsPerPeer", Log: s.log,
		}))
	}()
	return s, nil
}

// scanDirs expands the --scan directories ("~/" from home); none given is
// ~/.avenor/sockets.
func scanDirs(dirs []string, home string) ([]string, error) {
	if len(dirs) == 0 {
		if home == "" {
			return nil, ErrNoHome
		}
		return []string{filepath.Join(home, ".avenor", "sockets")}, nil
	}
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		d = strings.TrimSpace(d)
		switch {
		case d == "":
			continue
		case d == "~" || strings.HasPrefix(d, "~/"):
			if home == "" {
				return nil, fmt.Errorf("--scan %q: $HOME is not set to expand ~", d)
			}
			d = filepath.Join(home, strings.TrimPrefix(d, "~"))
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("--scan %q: %w", d, err)
		}
		out = append(out, abs)
	}
	if len(out) == 0 {
		return nil, errors.New("--scan names no directory; give a comma-separated list of directories")
	}
	return out, nil
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead)
	return hex.EncodeToString(b[:])
}

// Addr is the address the board listens on (the real port of ":0").
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Token is the API token ("" with NoAuth).
func (s *Server) Token() string { return s.token }

// URL is the page's address, without the token.
func (s *Server) URL() string {
	host := s.Addr()
	if s.bind.loopback || s.bind.any {
		_, port, _ := net.SplitHostPort(host)
		if s.bind.any {
			host = net.JoinHostPort("127.0.0.1", port)
		}
	}
	return "http://" + host + "/board/"
}

// TokenURL is URL with ?token=: what a person opens. It holds the token:
// show it only to the person who started the board.
func (s *Server) TokenURL() string {
	if s.token == "" {
		return s.URL()
	}
	return s.URL() + "?token=" + s.token
}

// Done is closed when the server stopped serving.
func (s *Server) Done() <-chan struct{} { return s.served }

// Shutdown ends the event streams and stops serving (waiting for requests
// in flight until ctx ends).
func (s *Server) Shutdown(ctx context.Context) error {
	s.cancel()
	err := s.http.Shutdown(ctx)
	s.wg.Wait()
	<-s.served
	return err
}

// conn is a fresh control connection for one call on path and the
// function that closes it. Never a kept one, for two reasons: a mutation
// makes its connection the runtime's owner until it closes (docs/control-protocol.md#ownership),
// so a kept connection would lock the harness out of its own runtimes
// after one click on the board; and a run holds its permission requests
// for a connected control client (docs/permission-handler.md#precedence) instead of its file
// handler. Close waits until the server has let go of the connection, so
// ownership is free again when the route answers.
func (s *Server) conn(ctx context.Context, path string) (*client.Client, func(), error) {
	dctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	c, err := client.Dial(dctx, path)
	if err != nil {
		return nil, nil, err
	}
	if !s.cfg.AllowMutations {
		// Even for the length of one call, a board that cannot answer
		// must not hold a run's permission request.
		if err := observe(dctx, c); err != nil {
			c.Close()
			return nil, nil, err
		}
	}
	return c, func() { c.Close() }, nil
}

// authorized says whether r carries the token: Authorization: Bearer, or
// ?token= where allowQuery (the SSE stream).
func (s *Server) authorized(r *http.Request, allowQuery bool) bool {
	if s.token == "" {
		return true
	}
	got := ""
	if t, ok := bearerToken(r.Header.Get("Authorization")); ok {
		got = t
	} else if allowQuery {
		got = r.URL.Query().Get("token")
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) == 1
}

// bearerToken reads an Authorization header of the Bearer scheme. The
// scheme is case-insensitive (RFC 9110 §11.1): "bearer t" is as good as
// "Bearer t".
func bearerToken(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	return tok, tok != ""
}

// observe tells the server c only watches (client.Observe). A server
// older than the method cannot be told; it is watched all the same.
func observe(ctx context.Context, c *client.Client) error {
	err := c.Observe(ctx)
	var re *client.RPCError
	if errors.As(err, &re) && re.Code == client.CodeMethodNotFound {
		return nil
	}
	return err
}
