package control

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Config configures a Server. Zero values are usable except Path.
type Config struct {
	// Path is the Unix socket's path. Required.
	Path string
	// Logger receives diagnostics (refused peers, write failures); default
	// none.
	Logger hclog.Logger
	// IdentityToken is what the identity method answers (the
	// AVENOR_CONTROL_IDENTITY_TOKEN the process started with); default "".
	IdentityToken string
	// Ready is called once, when the socket listens (AVENOR_CONTROL_READY_FD);
	// default nothing.
	Ready func()
	// OnConnections is called with the number of open connections each time
	// it changes (the permission broker falls through when it reaches 0);
	// default nothing. It must not call back into the Server.
	OnConnections func(n int)
}

// Server is a control server: the socket, its connections, the ownership
// and the method table. Register methods with Handle before Start.
type Server struct {
	cfg    Config
	log    hclog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	// peerCred is the credential check; tests replace it.
	peerCred func(*net.UnixConn) (uid, pid int, err error)
	// budget bounds the request lines all connections hold
	// (MaxPendingRequestBytes); mem returns what they let go of.
	budget *lineBudget
	mem    *memoryReturner
	// maxConns and maxPerProcess are MaxConnections and
	// MaxConnectionsPerProcess; tests lower them.
	maxConns, maxPerProcess int

	// countMu orders OnConnections calls: each count is computed and
	// reported under it, so the last report is the current count. It also
	// guards idle.
	countMu sync.Mutex
	// idle is closed while no connection that may answer permissions is
	// open (observers do not count).
	idle chan struct{}

	mu      sync.Mutex
	methods map[string]Method
	ln      *net.UnixListener
	sock    *socketFile
	conns   map[*Conn]struct{}
	// observers counts the connections that called observe: they watch
	// and never answer, so they hold no permission request (docs/permission-handler.md#precedence).
	observers int
	// perProcess counts the open connections of each peer pid (those
	// whose pid is known).
	perProcess map[int]int
	owner      *Conn
	// ownerPending counts the owner's mutating calls in flight;
	// ownerConfirmed is set once one of them succeeded (see claim).
	ownerPending   int
	ownerConfirmed bool
	nextID         uint64
	started        bool
	closed         bool
	wg             sync.WaitGroup
}

// NewServer returns a server with the identity method registered.
func NewServer(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg: cfg, log: cfg.Logger, ctx: ctx, cancel: cancel, peerCred: peerCred,
		budget: &lineBudget{max: MaxPendingRequestBytes}, mem: newMemoryReturner(),
		maxConns: MaxConnections, maxPerProcess: MaxConnectionsPerProcess,
		methods: map[string]Method{}, conns: map[*Conn]struct{}{}, perProcess: map[int]int{}, idle: make(chan struct{}),
	}
	close(s.idle)
	token := cfg.IdentityToken
	s.Handle("observe", Method{Handler: func(_ context.Context, c *Call) (any, error) {
		s.observe(c.Conn)
		return map[string]any{"observing": true}, nil
	}})
	s.Handle("identity", Method{Handler: func(context.Context, *Call) (any, error) {
		return map[string]any{"token": token}, nil
	}})
	return s
}

// Handle registers a method. It panics on a duplicate name or after Start:
// both are programming errors.
func (s *Server) Handle(name string, m Method) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		panic("control: Handle after Start")
	}
	if _, dup := s.methods[name]; dup {
		panic("control: duplicate method " + name)
	}
	if m.Handler == nil {
		panic("control: nil handler for " + name)
	}
	s.methods[name] = m
}

// Start binds the socket (docs/control-protocol.md#transport-and-framing), calls Config.Ready and accepts
// connections until Close.
func (s *Server) Start() error {
	s.mu.Lock()
	if s.started || s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.started = true
	s.mu.Unlock()

	ln, sock, err := listenSocket(s.cfg.Path)
	if err != nil {
		return err
	}
	if sock.shared {
		s.log.Warn("control socket is in a directory every user can write; clients check that it is yours before they send, "+
			"but another user can take the path while it is free: prefer a directory only you can write, e.g. $XDG_RUNTIME_DIR",
			"path", s.cfg.Path)
	}
	s.mu.Lock()
	s.ln, s.sock = ln, sock
	s.mu.Unlock()
	s.Go(func(ctx context.Context) { s.mem.run(ctx.Done()) })
	s.wg.Add(1)
	go s.accept(ln)
	if s.cfg.Ready != nil {
		s.cfg.Ready()
	}
	return nil
}

// Go runs f on a goroutine the server owns: ctx ends at Close, which waits
// for f to return.
func (s *Server) Go(f func(ctx context.Context)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f(s.ctx)
	}()
}

// Path returns the socket's path.
func (s *Server) Path() string { return s.cfg.Path }

// Close stops accepting, closes every connection, waits for the server's
// goroutines and unlinks the socket if it is still this server's.
// It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	ln, sock := s.ln, s.sock
	conns := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	s.cancel()
	if ln != nil {
		ln.Close()
	}
	for _, c := range conns {
		c.nc.Close()
	}
	s.wg.Wait()
	if sock != nil {
		return sock.remove()
	}
	return nil
}

// acceptor is what the accept loop needs of its listener; tests inject one
// that fails.
type acceptor interface {
	AcceptUnix() (*net.UnixConn, error)
}

func (s *Server) accept(ln acceptor) {
	defer s.wg.Done()
	var (
		pause    time.Duration
		failures = rateLog{every: AcceptLogInterval}
		refused  = rateLog{every: AcceptLogInterval}
		over     = rateLog{every: AcceptLogInterval}
		// overProcess is logged apart from over: a process at its share
		// must not hide that the socket as a whole is full.
		overProcess = rateLog{every: AcceptLogInterval}
	)
	for {
		nc, err := ln.AcceptUnix()
		if err != nil {
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors (EMFILE, ENFILE) or buffers: retrying at
			// once spins a core and floods the log while nothing changes.
			pause = min(max(2*pause, AcceptBackoffMin), AcceptBackoffMax)
			failures.log(s.log, "control socket accept failed; retrying with a pause", "error", err, "pause", pause)
			if !s.sleep(pause) {
				return
			}
			continue
		}
		pause = 0
		pid, reason := s.refuse(nc)
		if reason != "" {
			refused.log(s.log, "refused a control connection", "reason", reason)
			nc.Close()
			continue
		}
		s.countMu.Lock()
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			s.countMu.Unlock()
			nc.Close()
			return
		}
		if len(s.conns) >= s.maxConns {
			s.mu.Unlock()
			s.countMu.Unlock()
			over.log(s.log, "refused a control connection: too many control connections", "open", s.maxConns)
			refuseOverCap(nc, overCapLine(s.maxConns))
			continue
		}
		// One process may not take the reserve: the owner and a one-shot
		// `avenor control` still get in while a client holds its share.
		if pid > 0 && s.perProcess[pid] >= s.maxPerProcess {
			s.mu.Unlock()
			s.countMu.Unlock()
			overProcess.log(s.log, "refused a control connection: too many control connections from one process",
				"pid", pid, "open", s.maxPerProcess)
			refuseOverCap(nc, overProcessLine(pid, s.maxPerProcess))
			continue
		}
		s.nextID++
		c := newConn(s, nc, s.nextID, pid)
		s.conns[c] = struct{}{}
		if pid > 0 {
			s.perProcess[pid]++
		}
		n, answerers := len(s.conns), len(s.conns)-s.observers
		s.wg.Add(1)
		s.mu.Unlock()
		s.connectionsChanged(n, answerers)
		s.countMu.Unlock()
		go c.serve()
	}
}

// overCapLine answers a connection over MaxConnections (limit).
func overCapLine(limit int) []byte {
	return EncodeError(nil, &Error{Code: CodeServerError,
		Message: fmt.Sprintf("too many control connections: %d are open (the limit, control.MaxConnections); close one and retry", limit)})
}

// overProcessLine answers a connection of a process that holds
// MaxConnectionsPerProcess (limit) already.
func overProcessLine(pid, limit int) []byte {
	return EncodeError(nil, &Error{Code: CodeServerError,
		Message: fmt.Sprintf("too many control connections from one process: pid %d holds %d (the limit per process, "+
			"control.MaxConnectionsPerProcess; the other control.ReservedConnections are kept for other processes); close one and retry", pid, limit)})
}

// refuseOverCap sends line and closes nc. The socket is fresh, so the
// line fits its buffer and the write does not wait; the deadline only
// guards the accept loop against the impossible.
func refuseOverCap(nc *net.UnixConn, line []byte) {
	_ = nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_, _ = nc.Write(line)
	nc.Close()
}

// sleep pauses for d; false when the server closed meanwhile.
func (s *Server) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// rateLog logs a repeated warning at most once per interval, counting the
// ones it left out: a flood of failures or refusals must not become a flood
// of log lines. Used by one goroutine.
type rateLog struct {
	every      time.Duration
	last       time.Time
	suppressed int
}

func (r *rateLog) log(l hclog.Logger, msg string, args ...any) {
	now := time.Now()
	if !r.last.IsZero() && now.Sub(r.last) < r.every {
		r.suppressed++
		return
	}
	if r.suppressed > 0 {
		args = append(args, "repeated", r.suppressed, "since", r.last.Format(time.RFC3339))
	}
	l.Warn(msg, args...)
	r.last, r.suppressed = now, 0
}

// refuse says why a peer may not connect, "" when it may, and returns the
// peer's pid (0 where the system does not tell it).
func (s *Server) refuse(nc *net.UnixConn) (pid int, reason string) {
	uid, pid, err := s.peerCred(nc)
	if errors.Is(err, errNoPeerCred) {
		return 0, ""
	}
	if err != nil {
		return 0, fmt.Sprintf("could not read the peer's credentials: %v", err)
	}
	if me := os.Getuid(); uid != me {
		return pid, fmt.Sprintf("peer pid %d runs as uid %d, this avenor as uid %d; only the same user may control it", pid, uid, me)
	}
	return pid, ""
}

// connectionsChanged reports a new count of connections, and of those
// that may answer permissions; called with countMu held.
func (s *Server) connectionsChanged(n, answerers int) {
	select {
	case <-s.idle:
		if answerers > 0 {
			s.idle = make(chan struct{})
		}
	default:
		if answerers == 0 {
			close(s.idle)
		}
	}
	if s.cfg.OnConnections != nil {
		s.cfg.OnConnections(n)
	}
}

// dropConn forgets a closed connection and releases its ownership.
func (s *Server) dropConn(c *Conn) {
	s.countMu.Lock()
	defer s.countMu.Unlock()
	s.mu.Lock()
	if _, ok := s.conns[c]; ok && c.observer {
		s.observers--
	}
	delete(s.conns, c)
	if c.pid > 0 {
		if s.perProcess[c.pid]--; s.perProcess[c.pid] <= 0 {
			delete(s.perProcess, c.pid)
		}
	}
	n, answerers := len(s.conns), len(s.conns)-s.observers
	s.mu.Unlock()
	s.connectionsChanged(n, answerers)
}

// observe marks c as a connection that only watches (a read-only board
// view): from now on it does not count as a connected control client for
// permission requests, so a run gives them to its other resolvers (the
// file handler) instead of holding them for a client that cannot answer.
// Once is enough; it cannot be undone on the connection.
func (s *Server) observe(c *Conn) {
	s.countMu.Lock()
	defer s.countMu.Unlock()
	s.mu.Lock()
	if _, ok := s.conns[c]; !ok || c.observer {
		s.mu.Unlock()
		return
	}
	c.observer = true
	s.observers++
	n, answerers := len(s.conns), len(s.conns)-s.observers
	s.mu.Unlock()
	s.connectionsChanged(n, answerers)
}

// release gives up c's ownership, if it has it.
func (s *Server) release(c *Conn) {
	s.mu.Lock()
	if s.owner == c {
		s.owner, s.ownerPending, s.ownerConfirmed = nil, 0, false
	}
	s.mu.Unlock()
}

// claim makes c the owner for a mutating call if there is none; false when
// another connection owns the server. Every true must be followed by
// settle with the call's outcome: only a call that succeeds keeps the
// ownership (docs/control-protocol.md#ownership: the first mutator becomes the owner, and a call
// that failed mutated nothing). While the first call is in flight no other
// connection may mutate.
func (s *Server) claim(c *Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owner == nil {
		s.owner = c
	}
	if s.owner != c {
		return false
	}
	s.ownerPending++
	return true
}

// settle ends a claimed call: a success confirms c's ownership; when no
// call of c ever succeeded and none is left in flight, ownership is free
// again.
func (s *Server) settle(c *Conn, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owner != c {
		return // released by the connection's teardown meanwhile
	}
	s.ownerPending--
	if ok {
		s.ownerConfirmed = true
	}
	if s.ownerPending == 0 && !s.ownerConfirmed {
		s.owner = nil
	}
}

func (s *Server) method(name string) (Method, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.methods[name]
	return m, ok
}

// Connected reports whether at least one control client that may answer
// permissions is connected (the permission broker's "connected control
// client", docs/permission-handler.md#precedence): a connection that called observe does not count.
func (s *Server) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)-s.observers > 0
}

// Disconnected returns a channel that is closed while no client that may
// answer permissions is connected; after one connects, call again for the
// next one.
func (s *Server) Disconnected() <-chan struct{} {
	s.countMu.Lock()
	defer s.countMu.Unlock()
	return s.idle
}

// Connections returns the number of open connections.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
