package stable

import (
	"cmp"
	"context"
	"fmt"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/control/httpdebug"
	"github.com/avenor-go/avenor/host/fleet"
	hostrun "github.com/avenor-go/avenor/host/run"
	"github.com/avenor-go/avenor/host/suprecord"
	"github.com/avenor-go/avenor/sdk/plugin"
)

// ServeConfig is a whole `avenor stable`: the supervisor and what is
// assembled around it — the fleet it joins, its durable state directory,
// its plugins' linger window, the HTTP debug adapter, its supervisor
// record and the signals that stop it.
type ServeConfig struct {
	// Config is the supervisor's. Serve fills IdentityToken and Ready
	// (the control socket's, host/control.TakeEnv), StateDir, Linger when
	// not LingerGiven, PermissionFileTimeout from the environment, and
	// Resolve, TempDir, Home and TreeBudgetPath when they are not given.
	Config
	// LingerGiven says Linger was given on the command line. Otherwise the
	// config files (and AVENOR_LINGER) set it, and a fleet node's is 0.
	LingerGiven bool
	// Env is the process's environment: the config files, the plugins
	// found and AVENOR_TREE_BUDGET, TMPDIR and HOME are read through it.
	Env hostrun.Env
	// Fleet, when URL is set, joins a fleet as a node agent.
	Fleet FleetNode
	// HTTPDebug starts the --http-debug adapter for the supervisor's
	// runtimes (httpdebug.Config.Stable set); nil: none.
	HTTPDebug func(httpdebug.Config) (*httpdebug.Server, error)
}

// The supervisor's soft memory limit (runtime/debug.SetMemoryLimit,
// docs/stable.md#limits): a share for itself and one per runtime
// --max-runtimes admits (its event history, plugin client and connection,
// their goroutines). Without it the collector let the resident memory grow
// to twice the live heap at every size. The share per runtime follows what
// a streaming runtime holds: 256 KiB until 2026-12-04, when its history,
// its plugin's stderr reader, its subscribers' line arenas and two of its
// goroutines shrank by ~50 KB.
const (
	SoftMemoryBaseBytes       = 48 << 20
	SoftMemoryBytesPerRuntime = 208 << 10
)

// SoftMemoryLimit is the limit for maxRuntimes (DefaultMaxRuntimes when
// ≤ 0); ok is false when the user set one (gomemlimit, GOMEMLIMIT's value).
func SoftMemoryLimit(gomemlimit string, maxRuntimes int) (limit int64, ok bool) {
	if gomemlimit != "" {
		return 0, false
	}
	return SoftMemoryBaseBytes + int64(cmp.Or(max(maxRuntimes, 0), DefaultMaxRuntimes))*SoftMemoryBytesPerRuntime, true
}

// FleetNode is `avenor stable --fleet URL --node NAME`.
type FleetNode struct {
	URL        string
	Auth       fleet.Auth
	Options    fleet.Options
	Node, Pool string
}

// Serve runs the supervisor of c until a shutdown, a signal (SIGINT,
// SIGTERM) or the idle timeout, and returns why it stopped. An error is
// one it could not start with, or Supervisor.Serve's. A fleet node agent
// that cannot serve the fleet says why on Stderr and stops the supervisor.
func Serve(ctx context.Context, c ServeConfig) (reason string, err error) {
	if c.Env.Getenv == nil {
		c.Env.Getenv = func(string) string { return "" }
	}
	var stores *fleet.Stores
	if c.Fleet.URL != "" {
		// The fleet is checked before anything starts: a URL that does not
		// answer, refused credentials or an incompatible stream stop here.
		st, leave, err := fleet.Join(ctx, c.Fleet.URL, "avenor stable --node "+c.Fleet.Node, c.Fleet.Auth, c.Fleet.Options)
		if err != nil {
			return "", err
		}
		defer leave()
		stores = st
	}
	if v := c.Env.Getenv(hostrun.PermissionFileTimeoutEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return "", fmt.Errorf("%s=%q is not a positive Go duration", hostrun.PermissionFileTimeoutEnv, v)
		}
		c.PermissionFileTimeout = d
	}
	if limit, ok := SoftMemoryLimit(c.Env.Getenv("GOMEMLIMIT"), c.MaxRuntimes); ok {
		// Only while this supervisor serves (a test process may run several).
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
	}
	listening := make(chan struct{})
	c.prepare(stores != nil, listening)
	sup, err := New(c.Config)
	if err != nil {
		return "", err
	}
	if c.HTTPDebug != nil {
		dbg, err := c.HTTPDebug(httpdebug.Config{Stable: sup.HTTPDebug()})
		if err != nil {
			return "", err
		}
		// Serve has ended every runtime's stream when it returns: the
		// adapter's streams deliver the last events, then it stops.
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), hostrun.HTTPDebugDrain)
			defer cancel()
			_ = dbg.Shutdown(ctx)
		}()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if stores != nil {
		var stopNode func()
		ctx, stopNode = c.runNode(ctx, stores, listening)
		defer stopNode()
	}
	if dirs, derr := config.DefaultDirs(c.Env.Getenv); derr == nil {
		// The board finds this supervisor by its record, wherever its socket is.
		if remove, rerr := suprecord.Register(dirs.State, suprecord.Record{Socket: c.SocketPath, RunID: sup.RunID()}); rerr == nil {
			defer remove()
		} else {
			c.Logger.Warn("the board will not list this supervisor unless it scans the socket's directory", "error", rerr)
		}
	}
	return sup.Serve(ctx)
}

// prepare fills the supervisor's Config: the control socket's identity
// token and readiness (closing listening too for a fleet node), the
// durable state directory and the linger window, and the resolver whose
// plugins carry that window in their environment.
func (c *ServeConfig) prepare(node bool, listening chan struct{}) {
	if c.TempDir == "" {
		c.TempDir = cmp.Or(c.Env.Getenv("TMPDIR"), "/tmp")
	}
	if c.Home == "" {
		c.Home = c.Env.Getenv("HOME")
	}
	if c.TreeBudgetPath == "" {
		c.TreeBudgetPath = c.Env.Getenv(EnvTreeBudget)
	}
	c.defaults()
	token, ready, err := control.TakeEnv()
	if err != nil {
		c.Logger.Warn("control socket readiness", "error", err)
	}
	if node {
		inner := ready
		ready = func() {
			if inner != nil {
				inner()
			}
			close(listening)
		}
	}
	c.IdentityToken, c.Ready = token, ready
	// The supervisor's durable state, one directory per socket, lets one
	// restarted on this socket recover the runtimes of one that died.
	if node {
		// A fleet node's runtimes move to other nodes when it dies: one
		// restarted would own them twice. It keeps no durable state, and
		// its plugins stop with it unless --linger says otherwise.
		if !c.LingerGiven {
			c.Linger = 0
		}
	} else if dirs, derr := config.DefaultDirs(c.Env.Getenv); derr == nil {
		c.StateDir = StateDirFor(dirs.State, c.SocketPath)
		if !c.LingerGiven {
			// The user's config file (and AVENOR_LINGER) may set it.
			if set, _, lerr := config.Load(config.Sources{Environ: c.Env.Environ, Dirs: dirs}); lerr == nil {
				c.Linger = set.Linger
			} else {
				c.Logger.Warn("reading the linger window from the config", "error", lerr)
			}
		}
	} else {
		c.Logger.Warn("no durable supervisor state: a restart will not recover the runtimes", "reason", derr)
	}
	if c.Resolve == nil {
		// Every plugin this supervisor launches gets the window in its own
		// environment; this process's is left alone.
		env := c.Env
		env.PluginEnv = append(env.PluginEnv[:len(env.PluginEnv):len(env.PluginEnv)], plugin.LingerEnv+"="+c.Linger.String())
		c.Resolve = hostrun.SpawnResolver(env)
	}
}

// runNode runs the fleet's node agent once the supervisor listens. The
// returned context ends with ctx, and when the agent cannot serve the
// fleet: a node that cannot serve stops. stopNode stops the agent and
// waits for it.
func (c *ServeConfig) runNode(ctx context.Context, stores *fleet.Stores, listening <-chan struct{}) (_ context.Context, stopNode func()) {
	done := make(chan struct{})
	ctx, stop := context.WithCancel(ctx)
	go func() {
		defer close(done)
		select {
		case <-listening:
		case <-ctx.Done():
			return
		}
		// The agent talks to this supervisor through its socket only.
		err := fleet.RunNode(ctx, fleet.NodeConfig{NC: stores.NC(), Stores: stores, Node: c.Fleet.Node, Pool: c.Fleet.Pool, Socket: c.SocketPath, Logger: c.Logger})
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(c.Stderr, "avenor stable: %v\n", err)
			stop()
		}
	}()
	return ctx, func() { stop(); <-done }
}
