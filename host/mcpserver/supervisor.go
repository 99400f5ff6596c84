package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/sdk/safefile"
)

// Bounds of acquiring a supervisor.
const (
	// StartupTimeout is how long an autostarted `avenor stable` has to
	// listen on its socket before the tool call that started it fails.
	StartupTimeout = 10 * time.Second
	// DialTimeout bounds one dial (and its health check) of a supervisor.
	DialTimeout = 5 * time.Second
	// ShutdownWait is how long avenor_shutdown waits for an autostarted
	// supervisor to exit after asking it to.
	ShutdownWait = 30 * time.Second
)

// Environment of an autostarted supervisor (host/control's docs/configuration.md#other-environment-variables
// variables; named here so this package needs nothing of host/control).
const (
	envReadyFD       = "AVENOR_CONTROL_READY_FD"
	envIdentityToken = "AVENOR_CONTROL_IDENTITY_TOKEN"
	envAuthToken     = "MCP_AUTH_TOKEN"
)

// supervisors holds the connections to the supervisors the tools reach:
// one persistent connection per socket, which is the owner of every
// mutation this server makes there (ownership is per connection, contract
// docs/control-protocol.md#ownership: a fresh connection per call would be refused once another holds
// it).
type supervisors struct {
	o *Options

	mu    sync.Mutex
	conns map[string]*conn
	// child is the supervisor this server autostarted at the default
	// socket, until it is shut down or found dead; exited closes when it
	// has been reaped.
	child  *os.Process
	exited chan struct{}
	closed bool
}

func newSupervisors(o *Options) *supervisors {
	return &supervisors{o: o, conns: map[string]*conn{}}
}

// errClosed is a tool call after Close.
var errClosed = errors.New("the MCP server is shutting down")

// defaultSocket is the socket of the supervisor used when a call names
// none.
func (p *supervisors) defaultSocket() string {
	if p.o.SupervisorSocket != "" {
		return p.o.SupervisorSocket
	}
	return p.o.ControlSocket
}

// get returns the persistent connection to socket ("" = the default
// supervisor), dialling it (or, for the default one, autostarting it) when
// there is none or the one there was has died.
func (p *supervisors) get(ctx context.Context, socket string) (*conn, error) {
	return p.getOr(ctx, socket, true)
}

// live is get without autostart: nil when nothing answers at socket.
func (p *supervisors) live(ctx context.Context, socket string) *conn {
	c, _ := p.getOr(ctx, socket, false)
	return c
}

func (p *supervisors) getOr(ctx context.Context, socket string, autostart bool) (*conn, error) {
	if socket == "" {
		socket = p.defaultSocket()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errClosed
	}
	if c := p.conns[socket]; c != nil {
		select {
		case <-c.c.Done():
			delete(p.conns, socket)
		default:
			// A supervisor killed a moment ago may not have been noticed
			// by the connection's reader yet: a write would then fail with
			// a broken pipe instead of re-dialling. One cheap round trip
			// tells a live connection from a dead one.
			if alive(ctx, c) {
				return c, nil
			}
			c.c.Close()
			delete(p.conns, socket)
		}
	}
	var c *conn
	var err error
	if autostart && socket == p.defaultSocket() && p.o.SupervisorSocket == "" && !p.o.NoAutostart {
		c, err = p.acquire(ctx, socket)
	} else {
		c, err = dialHealthy(ctx, socket)
		if err != nil {
			err = &dialError{socket: socket, err: err}
		}
	}
	if err != nil {
		return nil, err
	}
	p.conns[socket] = c
	return c, nil
}

// dialError is a supervisor that does not answer at socket; err says why
// (nothing listens, or what listens is no supervisor).
type dialError struct {
	socket string
	err    error
}

func (e *dialError) Error() string {
	return fmt.Sprintf("supervisor %s does not answer (%v): start it with `avenor stable --control-socket %s`, or pass the supervisor_id of a running one", e.socket, e.err, e.socket)
}

func (e *dialError) Unwrap() error { return e.err }

// nothingListens: the dial found no socket, or a socket nobody listens on
// (left by a supervisor that died), as opposed to something there that is
// not a supervisor.
func nothingListens(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}

// conn is a persistent supervisor connection.
type conn struct {
	c      *client.Client
	socket string
	// runID is the supervisor's supervisor_run_id: a supervisor started
	// anew at the same socket has another.
	runID string
}

// dialHealthy dials socket and checks that a supervisor answers there.
func dialHealthy(ctx context.Context, socket string) (*conn, error) {
	dctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	c, err := client.Dial(dctx, socket)
	if err != nil {
		return nil, err
	}
	var st struct {
		Supervisor bool   `json:"supervisor"`
		RunID      string `json:"supervisor_run_id"`
	}
	if err := c.Call(dctx, "status", map[string]any{}, &st); err != nil {
		c.Close()
		return nil, fmt.Errorf("what listens at %s does not answer the control protocol's status: %w", socket, err)
	}
	if !st.Supervisor {
		c.Close()
		return nil, fmt.Errorf("%s is a one-shot avenor run, not an avenor stable supervisor", socket)
	}
	return &conn{c: c, socket: socket, runID: st.RunID}, nil
}

// acquire attaches to the supervisor already answering at socket, or starts
// `avenor stable` there. A lock file beside the socket makes two servers
// starting at once agree on one supervisor.
func (p *supervisors) acquire(ctx context.Context, socket string) (*conn, error) {
	if err := safefile.PrivateDir(filepath.Dir(socket)); err != nil {
		return nil, fmt.Errorf("autostart supervisor: %w", err)
	}
	lock, err := safefile.OpenLock(socket + ".start.lock")
	if err != nil {
		return nil, fmt.Errorf("autostart supervisor: %w", err)
	}
	defer lock.Close()
	if err := flock(ctx, lock); err != nil {
		return nil, fmt.Errorf("autostart supervisor: lock %s: %w", lock.Name(), err)
	}
	if c, err := dialHealthy(ctx, socket); err == nil {
		return c, nil
	}
	return p.start(ctx, socket)
}

// flock takes an exclusive lock on f, giving up with ctx or after
// StartupTimeout (a starter that holds it longer is stuck).
func flock(ctx context.Context, f *os.File) error {
	deadline := time.Now().Add(StartupTimeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("held by another avenor mcp for over %v", StartupTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// start runs `avenor stable --control-socket socket --idle-timeout d` in a
// session of its own, so that it outlives this server (a restarted
// `avenor mcp` finds its runs still there) and ends by itself after the
// idle timeout. It is ready when it writes its ready byte; the identity
// token proves the connection reached this child and not another
// supervisor that took the path.
func (p *supervisors) start(ctx context.Context, socket string) (*conn, error) {
	exe := p.o.Avenor
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("autostart supervisor: find the avenor executable: %w", err)
		}
	}
	token := randomHex(16)
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("autostart supervisor: %w", err)
	}
	defer readyR.Close()
	args := []string{"stable", "--control-socket", socket}
	if p.o.IdleTimeout > 0 {
		args = append(args, "--idle-timeout", p.o.IdleTimeout.String())
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(childEnv(p.o.Env), envReadyFD+"=3", envIdentityToken+"="+token)
	cmd.ExtraFiles = []*os.File{readyW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// Its stderr must not be this server's: the supervisor outlives it, and
	// a write to a pipe nobody reads any more would kill it.
	if p.o.supervisorLog != "" {
		if f, err := os.OpenFile(p.o.supervisorLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o600); err == nil {
			defer f.Close()
			cmd.Stderr = f
		}
	}
	err = cmd.Start()
	readyW.Close()
	if err != nil {
		return nil, fmt.Errorf("autostart supervisor: start %s: %w", exe, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	ready := make(chan error, 1)
	go func() {
		var b [1]byte
		_, err := readyR.Read(b[:])
		ready <- err
	}()
	fail := func(err error) (*conn, error) {
		_ = cmd.Process.Kill()
		<-exited
		return nil, fmt.Errorf("autostart supervisor: %w (its log: %s)", err, p.o.supervisorLog)
	}
	timer := time.NewTimer(StartupTimeout)
	defer timer.Stop()
	select {
	case err := <-ready:
		if err != nil {
			return fail(fmt.Errorf("avenor stable exited before it listened on %s", socket))
		}
	case <-exited:
		return fail(fmt.Errorf("avenor stable exited before it listened on %s", socket))
	case <-timer.C:
		return fail(fmt.Errorf("avenor stable did not listen on %s within %v", socket, StartupTimeout))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	c, err := dialHealthy(ctx, socket)
	if err != nil {
		return fail(err)
	}
	id, err := c.c.Identity(ctx)
	if err != nil || id != token {
		c.c.Close()
		return fail(fmt.Errorf("another supervisor took %s while avenor stable started", socket))
	}
	p.child, p.exited = cmd.Process, exited
	return c, nil
}

// childEnv is the supervisor's environment: this server's, without the
// HTTP bearer token (no runtime needs it, and every runtime would inherit
// it) and without control variables meant for this process.
func childEnv(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case envAuthToken, envReadyFD, envIdentityToken:
			continue
		}
		out = append(out, kv)
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// shutdown stops the supervisor at socket ("" = default) in mode graceful
// or kill and forgets its connection; a supervisor this server started is
// waited for, so the next call autostarts a new one at the same socket.
func (p *supervisors) shutdown(ctx context.Context, socket, mode string) (bool, error) {
	if socket == "" {
		socket = p.defaultSocket()
	}
	cn, err := p.getOr(ctx, socket, false)
	if err != nil {
		if nothingListens(err) {
			return false, nil // no supervisor there: nothing to stop
		}
		if errors.Is(err, errClosed) {
			return false, err
		}
		return false, fmt.Errorf("shutdown %s: not an avenor supervisor, nothing was stopped: %w", socket, errors.Unwrap(err))
	}
	c := cn.c
	err = c.Shutdown(ctx, mode)
	p.mu.Lock()
	delete(p.conns, socket)
	var exited chan struct{}
	if socket == p.defaultSocket() && p.child != nil {
		exited, p.child, p.exited = p.exited, nil, nil
	}
	p.mu.Unlock()
	c.Close()
	if err != nil && !errors.Is(err, client.ErrClosed) {
		return true, fmt.Errorf("shutdown %s: %w", socket, err)
	}
	if exited != nil {
		select {
		case <-exited:
		case <-time.After(ShutdownWait):
			return true, fmt.Errorf("supervisor at %s did not exit within %v of its shutdown", socket, ShutdownWait)
		}
	}
	return true, nil
}

// close drops every connection. An autostarted supervisor is left to its
// idle timeout, so that its runs go on and a restarted server finds them;
// with no idle timeout it would never exit, so it is shut down.
func (p *supervisors) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = map[string]*conn{}
	child, exited := p.child, p.exited
	p.mu.Unlock()
	def := p.defaultSocket()
	for sock, cn := range conns {
		c := cn.c
		if sock == def && child != nil && p.o.IdleTimeout == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), DialTimeout)
			_ = c.Shutdown(ctx, "graceful")
			cancel()
			c.Close()
			select {
			case <-exited:
			case <-time.After(ShutdownWait):
			}
			continue
		}
		c.Close()
	}
}

// pid is the autostarted supervisor's pid (0 when none), for tests.
func (p *supervisors) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.child == nil {
		return 0
	}
	return p.child.Pid
}

// aliveWait bounds the liveness check of a cached supervisor connection.
const aliveWait = 2 * time.Second

// alive says whether c's supervisor still answers (identity, read-only).
func alive(ctx context.Context, c *conn) bool {
	ctx, cancel := context.WithTimeout(ctx, aliveWait)
	defer cancel()
	_, err := c.c.Identity(ctx)
	return err == nil
}
