package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/control/httpdebug"
	"github.com/avenor-go/avenor/host/fleet"
	"github.com/avenor-go/avenor/host/stable"
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
		Long:  help("stable"),
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

// stableMain checks the flags and hands the supervisor to host/stable's
// Serve; it returns the exit code.
func stableMain(cmd *cobra.Command, f *stableFlags, env Env) int {
	cfg, err := f.serveConfig(cmd.Flags(), env)
	if err == nil {
		var reason string
		if reason, err = stable.Serve(cmd.Context(), cfg); err == nil {
			cfg.Logger.Debug("supervisor stopped", "reason", reason)
			return exitOK
		}
	}
	fmt.Fprintf(env.Stderr, "avenor stable: %v\n", err)
	return exitFail
}

// serveConfig checks the flags and turns them into stable's ServeConfig.
func (f *stableFlags) serveConfig(fl *pflag.FlagSet, env Env) (stable.ServeConfig, error) {
	var none stable.ServeConfig
	if err := f.defaultSocket(fl, env); err != nil {
		return none, err
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--idle-timeout", f.idleTimeout}, {"--parked-timeout", f.parkedTimeout}, {"--shutdown-timeout", f.shutdownTimeout}, {"--permission-claim-timeout", f.claimTimout}, {"--warm-idle", f.warmIdle}, {"--linger", f.linger}} {
		if d.v < 0 {
			return none, fmt.Errorf("%s must not be negative, got %v", d.name, d.v)
		}
	}
	if f.httpDebugTokenFile != "" && f.httpDebug == "" {
		return none, errors.New("--http-debug-token-file needs --http-debug")
	}
	if f.maxRuntimes < 1 || f.maxTreeBudget < 1 {
		return none, errors.New("--max-runtimes and --max-tree-budget must be at least 1")
	}
	var warm []stable.WarmSpec
	for _, v := range f.warm {
		w, err := stable.ParseWarm(v)
		if err != nil {
			return none, err
		}
		warm = append(warm, w)
	}
	logger := newLogger(env)
	if f.fleet.url != "" || f.node != "" {
		if f.fleet.url == "" || f.node == "" {
			return none, errors.New("--fleet and --node go together (the fleet's NATS URL and this node's name)")
		}
		for _, c := range []struct{ what, v string }{{"--node", f.node}, {"--pool", f.pool}} {
			if err := fleet.CheckName(c.what, c.v); err != nil {
				return none, err
			}
		}
	}
	cfg := stable.ServeConfig{
		Config: stable.Config{
			SocketPath: f.controlSocket, MaxRuntimes: f.maxRuntimes, MaxTreeBudget: f.maxTreeBudget,
			IdleTimeout: f.idleTimeout, ParkedTimeout: f.parkedTimeout, ShutdownTimeout: f.shutdownTimeout,
			PermissionClaimTimeout: f.claimTimout, Linger: f.linger, Warm: warm, WarmIdle: f.warmIdle,
			Logger: logger, Stderr: env.Stderr,
		},
		LingerGiven: fl.Changed("linger"),
		Env:         env.resolveEnv(logger),
		Fleet:       stable.FleetNode{URL: f.fleet.url, Auth: f.fleet.auth, Options: f.fleet.opts, Node: f.node, Pool: f.pool},
	}
	if f.httpDebug != "" {
		cfg.HTTPDebug = func(c httpdebug.Config) (*httpdebug.Server, error) {
			return startHTTPDebug(f.httpDebug, f.httpDebugTokenFile, c, env, logger)
		}
	}
	return cfg, nil
}

// defaultSocket is ~/.avenor/sockets/default.sock when --control-socket is
// not given (docs/cli.md#avenor-control), in a directory only this user
// can write.
func (f *stableFlags) defaultSocket(fl *pflag.FlagSet, env Env) error {
	if !fl.Changed("control-socket") {
		home := env.Getenv("HOME")
		if home == "" {
			return errors.New("--control-socket is not given and $HOME is not set for ~/.avenor/sockets/default.sock; pass --control-socket")
		}
		if err := client.PrepareSocketDir(client.SocketDir(home)); err != nil {
			return err
		}
		f.controlSocket = client.DefaultSocketPath(home)
	}
	if f.controlSocket == "" {
		return errors.New("--control-socket is required")
	}
	return nil
}
