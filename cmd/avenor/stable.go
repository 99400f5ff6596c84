package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/control/httpdebug"
	"github.com/avenor-go/avenor/host/fleet"
	hostrun "github.com/avenor-go/avenor/host/run"
	"github.com/avenor-go/avenor/host/stable"
	"github.com/avenor-go/avenor/host/suprecord"
	"github.com/avenor-go/avenor/sdk/plugin"
)

// stableFlags are the flags of `avenor stable` (docs/stable.md; the durable workflow
// flags are not built yet).
type stableFlags struct {
	controlSocket, httpDebug, httpDebugTokenFile             string
	maxRuntimes, maxTreeBudget                               int
	idleTimeout, parkedTimeout, shutdownTimeout, claimTimout time.Duration
	// linger: how long plugins outlive a supervisor that died (docs/stable.md#surviving-a-restart).
	linger time.Duration
	// fleet, node, pool: join a fleet (docs/fleet.md).
	fleet      fleetConnFlags
	node, pool string
	// warm: --warm BACKEND=N[,dir=…] pools (docs/stable.md#warm-pools).
	warm     []string
	warmIdle time.Duration
}

func newStableCmd(env Env) *cobra.Command {
	f := &stableFlags{}
	cmd := &cobra.Command{
		Use:   "stable [--control-socket <path>] [flags]",
		Short: "Run a long-lived supervisor of many runtimes, controlled through its socket",
		Long: `Run a supervisor that spawns and controls many runtimes, each in its own plugin process,
through the control socket (avenor control --socket <path> spawn|list|status|prompt|cancel|shutdown…).
Without --control-socket it listens on ~/.avenor/sockets/default.sock (the directory is created
0700 and refused if another user owns it or can write it), where avenor control, avenor await and
avenor board look when they are given no socket. While it runs, the supervisor records its
socket, pid and run id in $XDG_STATE_HOME/avenor/supervisors/, so the board lists it wherever
its socket is.

Each runtime writes its events and sentinel to the paths its spawn gives, by default
$TMPDIR/avenor-stable/<supervisor run id>/<runtime id>/{events.ndjson,sentinel.env}. A runtime
whose turn ended well stays idle, ready for a follow-up prompt, until --parked-timeout; one
cancelled, failed or whose plugin died is ended, with its exit code and sentinel. A spawn with
loop_file or team_file runs the whole loop or team as one runtime (session_id ""). With
--warm BACKEND=N the supervisor keeps N runtimes of BACKEND started, initialised and with a
fresh session open in the given dir (default its working dir); a spawn of the same backend,
model, agent, thinking and dir takes one instead of waiting for a cold start, and the pool
refills in the background (list {"warm":true} and status {} show the pools). With
--http-debug, GET /runtimes, /status/<runtime_id>, /events?runtime_id= and
POST /cancel/<runtime_id> serve the runtimes over loopback HTTP. At exit the
supervisor writes <socket>.dead: STOPPED reason=<signal|shutdown|idle|start_failed|crashed> pid=… at=….

Exit codes: 0 after a shutdown, a signal or the idle timeout; 1 when it could not start.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("avenor stable takes no arguments, got %q", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitError{stableMain(cmd, f, env)}
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.controlSocket, "control-socket", "", "Unix socket for the control plane (default ~/.avenor/sockets/default.sock); the tombstone is <socket>.dead")
	fl.StringVar(&f.httpDebug, "http-debug", "", "loopback address (:port, localhost:port, 127.0.0.1:port) of the HTTP/SSE debug adapter; the token is shown only on a terminal")
	fl.StringVar(&f.httpDebugTokenFile, "http-debug-token-file", "", "write the --http-debug token to this file (0600), for scripts")
	fl.IntVar(&f.maxRuntimes, "max-runtimes", stable.DefaultMaxRuntimes, "runtimes executing at once; idle runtimes do not count")
	fl.IntVar(&f.maxTreeBudget, "max-tree-budget", stable.DefaultMaxTreeBudget, "executing runtimes of the whole tree of nested supervisors")
	fl.DurationVar(&f.idleTimeout, "idle-timeout", 0, "exit after this long with no executing runtime and no control connection (0: never)")
	fl.DurationVar(&f.parkedTimeout, "parked-timeout", stable.DefaultParkedTimeout, "how long a runtime whose turn ended stays idle for follow-ups (0: until shutdown)")
	fl.DurationVar(&f.shutdownTimeout, "shutdown-timeout", stable.DefaultShutdownTimeout, "how long a graceful shutdown waits for cancelled runtimes")
	fl.DurationVar(&f.claimTimout, "permission-claim-timeout", 0, "how long a control client may hold a permission request (0: no deadline)")
	fl.StringArrayVar(&f.warm, "warm", nil, "keep N runtimes of BACKEND started with a fresh session open, for spawns that match: BACKEND=N[,dir=D][,model=M][,agent=A][,thinking=T] (repeatable)")
	fl.DurationVar(&f.warmIdle, "warm-idle", stable.DefaultWarmIdle, "stop a warm pool's runtimes when no spawn took one for this long (0: never); the next spawn wakes it")
	fl.DurationVar(&f.linger, "linger", plugin.DefaultLinger, "how long runtimes outlive a supervisor that died, for one restarted on this socket to take them over (0: they stop at once)")
	f.fleet.register(fl, "fleet", "join the fleet at this NATS URL (nats://host:4222, comma-separated for a cluster) as a node agent")
	fl.StringVar(&f.node, "node", "", "this node's name in the fleet (letters, digits, - and _; required with --fleet)")
	fl.StringVar(&f.pool, "pool", fleet.DefaultPool, "the spawn pool this node takes from")
	return cmd
}

// stableMain wires and serves the supervisor; it returns the exit code.
func stableMain(cmd *cobra.Command, f *stableFlags, env Env) int {
	if !cmd.Flags().Changed("control-socket") {
		// docs/cli.md#avenor-control: the default socket, in a directory only
		// this user can write.
		home := env.Getenv("HOME")
		if home == "" {
			fmt.Fprintln(env.Stderr, "avenor stable: --control-socket is not given and $HOME is not set for ~/.avenor/sockets/default.sock; pass --control-socket")
			return exitFail
		}
		if err := client.PrepareSocketDir(client.SocketDir(home)); err != nil {
			fmt.Fprintf(env.Stderr, "avenor stable: %v\n", err)
			return exitFail
		}
		f.controlSocket = client.DefaultSocketPath(home)
	}
	if f.controlSocket == "" {
		fmt.Fprintln(env.Stderr, "avenor stable: --control-socket is required")
		return exitFail
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--idle-timeout", f.idleTimeout}, {"--parked-timeout", f.parkedTimeout}, {"--shutdown-timeout", f.shutdownTimeout}, {"--permission-claim-timeout", f.claimTimout}, {"--warm-idle", f.warmIdle}, {"--linger", f.linger}} {
		if d.v < 0 {
			fmt.Fprintf(env.Stderr, "avenor stable: %s must not be negative, got %v\n", d.name, d.v)
			return exitFail
		}
	}
	if f.httpDebugTokenFile != "" && f.httpDebug == "" {
		fmt.Fprintln(env.Stderr, "avenor stable: --http-debug-token-file needs --http-debug")
		return exitFail
	}
	if f.maxRuntimes < 1 || f.maxTreeBudget < 1 {
		fmt.Fprintln(env.Stderr, "avenor stable: --max-runtimes and --max-tree-budget must be at least 1")
		return exitFail
	}
	var warm []stable.WarmSpec
	for _, v := range f.warm {
		w, err := stable.ParseWarm(v)
		if err != nil {
			fmt.Fprintf(env.Stderr, "avenor stable: %v\n", err)
			return exitFail
		}
		warm = append(warm, w)
	}
	logger := newLogger(env)
	var fleetStores *fleet.Stores
	if f.fleet.url != "" || f.node != "" {
		if f.fleet.url == "" || f.node == "" {
			fmt.Fprintln(env.Stderr, "avenor stable: --fleet and --node go together (the fleet's NATS URL and this node's name)")
			return exitFail
		}
		for _, c := range []struct{ what, v string }{{"--node", f.node}, {"--pool", f.pool}} {
			if err := fleet.CheckName(c.what, c.v); err != nil {
				fmt.Fprintf(env.Stderr, "avenor stable: %v\n", err)
				return exitFail
			}
		}
		// The fleet is checked before anything starts: a URL that does not
		// answer, refused credentials or an incompatible stream stop here.
		st, closeNC, err := f.fleet.connect(cmd.Context(), "avenor stable --node "+f.node)
		if err != nil {
			fmt.Fprintf(env.Stderr, "avenor stable: %v\n", err)
			return exitFail
		}
		defer closeNC()
		fleetStores = st
	}
	token, ready, err := control.TakeEnv()
	listening := make(chan struct{})
	if fleetStores != nil {
		inner := ready
		ready = func() {
			if inner != nil {
				inner()
			}
			close(listening)
		}
	}
	if err != nil {
		logger.Warn("control socket readiness", "error", err)
	}
	var fileTimeout time.Duration
	if v := env.Getenv(permissionFileTimeoutEnv); v != "" {
		if fileTimeout, err = time.ParseDuration(v); err != nil || fileTimeout <= 0 {
			fmt.Fprintf(env.Stderr, "avenor stable: %s=%q is not a positive Go duration\n", permissionFileTimeoutEnv, v)
			return exitFail
		}
	}
	// The supervisor's durable state, one directory per socket, lets one
	// restarted on this socket recover the runtimes of one that died.
	var stateDir string
	if fleetStores != nil {
		// A fleet node's runtimes move to other nodes when it dies: one
		// restarted would own them twice. It keeps no durable state, and
		// its plugins stop with it unless --linger says otherwise.
		if !cmd.Flags().Changed("linger") {
			f.linger = 0
		}
	} else if dirs, derr := config.DefaultDirs(env.Getenv); derr == nil {
		stateDir = stable.StateDirFor(dirs.State, f.controlSocket)
		if !cmd.Flags().Changed("linger") {
			// The user's config file (and AVENOR_LINGER) may set it.
			if set, _, lerr := config.Load(config.Sources{Environ: env.Environ, Dirs: dirs}); lerr == nil {
				f.linger = set.Linger
			} else {
				logger.Warn("reading the linger window from the config", "error", lerr)
			}
		}
	} else {
		logger.Warn("no durable supervisor state: a restart will not recover the runtimes", "reason", derr)
	}
	// Every plugin this supervisor launches inherits it; the plugin takes it
	// out of its own environment, so nothing it starts sees it.
	os.Setenv(plugin.LingerEnv, f.linger.String())
	sup, err := stable.New(stable.Config{
		SocketPath: f.controlSocket, MaxRuntimes: f.maxRuntimes, MaxTreeBudget: f.maxTreeBudget,
		IdleTimeout: f.idleTimeout, ParkedTimeout: f.parkedTimeout, ShutdownTimeout: f.shutdownTimeout,
		PermissionClaimTimeout: f.claimTimout, PermissionFileTimeout: fileTimeout,
		StateDir: stateDir, Linger: f.linger,
		TempDir: orDefault(env.Getenv("TMPDIR"), "/tmp"), Home: env.Getenv("HOME"),
		TreeBudgetPath: env.Getenv(stable.EnvTreeBudget),
		Resolve:        stableResolver(env, logger), IdentityToken: token, Ready: ready,
		Warm: warm, WarmIdle: f.warmIdle,
		Logger: logger, Stderr: env.Stderr,
	})
	if err != nil {
		fmt.Fprintf(env.Stderr, "avenor stable: %v\n", err)
		return exitFail
	}
	if f.httpDebug != "" {
		dbg, err := startHTTPDebug(f.httpDebug, f.httpDebugTokenFile, httpdebug.Config{Stable: sup.HTTPDebug()}, env, logger)
		if err != nil {
			fmt.Fprintf(env.Stderr, "avenor stable: %v\n", err)
			return exitFail
		}
		// Serve has ended every runtime's stream when it returns: the
		// adapter's streams deliver the last events, then it stops.
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), hostrun.HTTPDebugDrain)
			defer cancel()
			_ = dbg.Shutdown(ctx)
		}()
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var agentDone chan struct{}
	if fleetStores != nil {
		agentDone = make(chan struct{})
		actx, acancel := context.WithCancel(ctx)
		defer func() { acancel(); <-agentDone }()
		ctx2, stop2 := context.WithCancel(ctx)
		defer stop2()
		ctx = ctx2
		go func() {
			defer close(agentDone)
			select {
			case <-listening:
			case <-actx.Done():
				return
			}
			// The agent talks to this supervisor through its socket only.
			err := fleet.RunNode(actx, fleet.NodeConfig{NC: fleetStores.NC(), Stores: fleetStores, Node: f.node, Pool: f.pool, Socket: f.controlSocket, Logger: logger})
			if err != nil && actx.Err() == nil {
				fmt.Fprintf(env.Stderr, "avenor stable: %v\n", err)
				stop2() // a node that cannot serve the fleet stops
			}
		}()
	}
	if dirs, derr := config.DefaultDirs(env.Getenv); derr == nil {
		// The board finds this supervisor by its record, wherever its socket is.
		if remove, rerr := suprecord.Register(dirs.State, suprecord.Record{Socket: f.controlSocket, RunID: sup.RunID()}); rerr == nil {
			defer remove()
		} else {
			logger.Warn("the board will not list this supervisor unless it scans the socket's directory", "error", rerr)
		}
	}
	reason, err := sup.Serve(ctx)
	if err != nil {
		fmt.Fprintf(env.Stderr, "avenor stable: %v\n", err)
		return exitFail
	}
	logger.Debug("supervisor stopped", "reason", reason)
	return exitOK
}

// stableResolver resolves a spawn as avenor run resolves its flags
// (host/run.Resolve): defaults < user file < project file (found from the
// spawn's dir) < env < the spawn's params, then the plugin that serves the
// backend, the project's .avenor/plugins.lock first.
func stableResolver(env Env, logger hclog.Logger) stable.Resolver {
	return func(dir string, set map[string]any) (stable.Backend, error) {
		res, err := hostrun.Resolve(env.resolveEnv(logger), dir, set)
		if err != nil {
			return stable.Backend{}, err
		}
		b, err := res.Backend(res.Settings.Backend)
		if err != nil {
			return stable.Backend{}, err
		}
		return stable.Backend{Settings: res.Settings, Backend: b}, nil
	}
}
