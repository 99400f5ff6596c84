package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of `avenor mcp` (docs/mcp.md).
const (
	DefaultAddr        = "127.0.0.1:3748"
	DefaultIdleTimeout = 30 * time.Minute
	// DefaultHTTPMaxWait clamps every wait over HTTP, where a proxy or
	// client would drop a request held open much longer (the original's
	// 25 s); over stdio waits are not clamped unless --max-wait says so.
	DefaultHTTPMaxWait = 25 * time.Second
)

// Options configure a Server. The zero value serves the default
// supervisor, autostarted at <Home>/.avenor/sockets/avenor-mcp-<pid>.sock.
type Options struct {
	// SupervisorSocket is an existing supervisor's socket; when set nothing
	// is autostarted and a dead connection is dialled again.
	SupervisorSocket string
	// ControlSocket is where the autostarted supervisor listens; "" is
	// <Home>/.avenor/sockets/avenor-mcp-<pid>.sock. Ignored with
	// SupervisorSocket.
	ControlSocket string
	// NoAutostart refuses to start a supervisor; it needs SupervisorSocket.
	NoAutostart bool
	// IdleTimeout is the autostarted supervisor's --idle-timeout; 0 means
	// none, and then Close shuts the supervisor down (it would never exit).
	IdleTimeout time.Duration
	// MaxWait clamps every wait (avenor_status wait_for, avenor_result);
	// a clamped reply says wait_clamped:true. 0: no clamp.
	MaxWait time.Duration
	// Avenor is the executable autostarted as `avenor stable`; "" is this
	// process's own.
	Avenor string
	// Home is the user's home directory (the default socket's); StateDir
	// avenor's state directory, under which <StateDir>/mcp holds the run
	// registry. Both required unless the sockets are given and StateDir is.
	Home, StateDir string
	// Env is the autostarted supervisor's environment (nil: this
	// process's); MCP_AUTH_TOKEN is always removed from it.
	Env []string
	// AuthToken is the HTTP transport's bearer token (required for
	// Handler); AllowedHosts are host names accepted in Host and Origin
	// besides the loopback ones.
	AuthToken    string
	AllowedHosts []string
	// ListBackends answers avenor_list_backends (the capability matrix of
	// the installed plugins, as `avenor backends --json`); nil: the tool
	// says it is unavailable.
	ListBackends func(context.Context) (any, error)
	// Version is the server's version in the MCP handshake.
	Version string
	// CheckBackend is avenor_spawn's readiness check of the backend a spawn
	// in dir would run ("" = the configured default); nil: the plugin's
	// own Check, resolved as the supervisor resolves it (readiness.go).
	CheckBackend func(ctx context.Context, dir, backend string) Readiness

	supervisorLog string // the autostarted supervisor's stderr
}

// Server is the MCP server of `avenor mcp`.
type Server struct {
	o   Options
	mcp *mcp.Server
	sup *supervisors

	mu       sync.Mutex
	regs     map[string]*registry // by socket
	watchers map[string]*watcher  // by socket
	ready    readyCache
}

// Option errors, with the original's messages.
var (
	ErrNoAutostart = errors.New("--no-autostart requires --supervisor-socket")
)

// New validates o and registers the tools; nothing is dialled or started
// until the first tool call.
func New(o Options) (*Server, error) {
	if o.NoAutostart && o.SupervisorSocket == "" {
		return nil, ErrNoAutostart
	}
	if o.IdleTimeout < 0 || o.MaxWait < 0 {
		return nil, errors.New("--idle-timeout and --max-wait must not be negative")
	}
	if o.SupervisorSocket == "" && o.ControlSocket == "" {
		if o.Home == "" {
			return nil, errors.New("$HOME is not set, so there is no default control socket: pass --control-socket or --supervisor-socket")
		}
		o.ControlSocket = filepath.Join(o.Home, ".avenor", "sockets", fmt.Sprintf("avenor-mcp-%d.sock", os.Getpid()))
	}
	for _, p := range []*string{&o.SupervisorSocket, &o.ControlSocket} {
		if *p != "" {
			abs, err := filepath.Abs(*p)
			if err != nil {
				return nil, err
			}
			*p = abs
		}
	}
	if o.StateDir == "" {
		return nil, errors.New("no state directory for the run registry: set HOME or XDG_STATE_HOME")
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	s := &Server{o: o, regs: map[string]*registry{}, watchers: map[string]*watcher{}}
	reg, err := s.registry(s.defaultSocket())
	if err != nil {
		return nil, err
	}
	s.o.supervisorLog = filepath.Join(reg.dir, "supervisor.log")
	s.sup = newSupervisors(&s.o)
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "avenor", Title: "avenor", Version: o.Version},
		&mcp.ServerOptions{Instructions: instructions, Capabilities: &mcp.ServerCapabilities{}})
	s.addTools()
	return s, nil
}

// instructions tell a connected agent how the tools fit together.
const instructions = `avenor runs other coding agents for you, each a run of an avenor supervisor.
avenor_spawn starts one (repo_dir and prompt) and returns its run_id. Then either block with
avenor_result (waits for the turn to end and returns the output) or poll with avenor_status
(wait_for: terminal, phase_change, turn_complete or permission). A status "waiting" is a
permission request: answer it with avenor_answer_permission. avenor_follow_up continues a finished
run's session with a new message; avenor_cancel stops a run; avenor_shutdown stops the supervisor.
avenor_list_backends lists the runtimes you can choose with backend. Durable workflow tools are not
available in this avenor.`

// MCP is the underlying go-sdk server (for in-process transports).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one MCP session on t (stdio: &mcp.StdioTransport{}) until it
// ends or ctx is cancelled.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.mcp.Run(ctx, t)
}

// Close drops the supervisor connections (see supervisors.close for what
// becomes of an autostarted supervisor).
func (s *Server) Close() error {
	s.mu.Lock()
	ws := s.watchers
	s.watchers = nil // closed: a wait still going polls
	s.mu.Unlock()
	for _, w := range ws {
		w.close()
	}
	s.sup.close()
	return nil
}

// watcher returns the shared subscription of socket's waits.
func (s *Server) watcher(socket string) *watcher {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watchers == nil { // after Close
		w := newWatcher(socket)
		w.closed = true
		return w
	}
	w := s.watchers[socket]
	if w == nil {
		w = newWatcher(socket)
		s.watchers[socket] = w
	}
	return w
}

// SupervisorPID is the pid of the supervisor this server autostarted, 0
// when none runs (tests use it to check nothing is left behind).
func (s *Server) SupervisorPID() int { return s.sup.pid() }

// Handler is the Streamable HTTP transport behind the Host, Origin and
// bearer token checks (http.go).
func (s *Server) Handler() (http.Handler, error) {
	if s.o.AuthToken == "" {
		return nil, ErrHTTPToken
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		// The SDK's own DNS-rebinding check knows no allow-list; guard
		// makes the same check and honours AllowedHosts.
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, DisableLocalhostProtection: true})
	return guard(h, s.o.AuthToken, s.o.AllowedHosts), nil
}

func (s *Server) defaultSocket() string {
	if s.o.SupervisorSocket != "" {
		return s.o.SupervisorSocket
	}
	return s.o.ControlSocket
}

// registry returns the registry of a socket ("" = the default one).
func (s *Server) registry(socket string) (*registry, error) {
	if socket == "" {
		socket = s.defaultSocket()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.regs[socket]; r != nil {
		return r, nil
	}
	r, err := openRegistry(s.o.StateDir, socket)
	if err != nil {
		return nil, err
	}
	s.regs[socket] = r
	return r, nil
}

// supervisor returns the connection to socket ("" = default),
// autostarting the default supervisor when it is not running.
func (s *Server) supervisor(ctx context.Context, socket string) (*conn, error) {
	return s.sup.get(ctx, socket)
}
