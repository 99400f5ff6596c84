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
	hostrun "github.com/avenor-go/avenor/host/run"
	"github.com/avenor-go/avenor/host/stable"
	"github.com/avenor-go/avenor/sdk/plugin"
)

// stableFlags are the flags of `avenor stable` (docs/stable.md; the durable
// workflow flags are not built yet) that are not stable.ServeConfig's own.
type stableFlags struct {
	httpDebug, httpDebugTokenFile string
	// warm: --warm BACKEND=N[,dir=…] pools (docs/stable.md#warm-pools).
	warm []string
}

func newStableCmd(env Env) *cobra.Command {
	f, c := &stableFlags{}, &stable.ServeConfig{}
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
			return exitError{stableMain(cmd, f, c, env)}
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&c.SocketPath, "control-socket", "", "Unix socket for the control plane (default ~/.avenor/sockets/default.sock); the tombstone is <socket>.dead")
	registerHTTPDebug(fl, &f.httpDebug, &f.httpDebugTokenFile)
	fl.IntVar(&c.MaxRuntimes, "max-runtimes", stable.DefaultMaxRuntimes, "runtimes executing at once; idle runtimes do not count")
	fl.IntVar(&c.MaxTreeBudget, "max-tree-budget", stable.DefaultMaxTreeBudget, "executing runtimes of the whole tree of nested supervisors")
	fl.DurationVar(&c.IdleTimeout, "idle-timeout", 0, "exit after this long with no executing runtime and no control connection (0: never)")
	fl.DurationVar(&c.ParkedTimeout, "parked-timeout", stable.DefaultParkedTimeout, "how long a runtime whose turn ended stays idle for follow-ups (0: until shutdown)")
	fl.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", stable.DefaultShutdownTimeout, "how long a graceful shutdown waits for cancelled runtimes")
	fl.DurationVar(&c.PermissionClaimTimeout, "permission-claim-timeout", 0, "how long a control client may hold a permission request (0: no deadline)")
	fl.StringArrayVar(&f.warm, "warm", nil, "keep N runtimes of BACKEND started with a fresh session open, for spawns that match: BACKEND=N[,dir=D][,model=M][,agent=A][,thinking=T] (repeatable)")
	fl.DurationVar(&c.WarmIdle, "warm-idle", stable.DefaultWarmIdle, "stop a warm pool's runtimes when no spawn took one for this long (0: never); the next spawn wakes it")
	fl.DurationVar(&c.Linger, "linger", plugin.DefaultLinger, "how long runtimes outlive a supervisor that died, for one restarted on this socket to take them over (0: they stop at once)")
	registerFleetConn(fl, &c.Fleet.URL, &c.Fleet.Auth, &c.Fleet.Options, "fleet", "join the fleet at this NATS URL (nats://host:4222, comma-separated for a cluster) as a node agent")
	fl.StringVar(&c.Fleet.Node, "node", "", "this node's name in the fleet (letters, digits, - and _; required with --fleet)")
	fl.StringVar(&c.Fleet.Pool, "pool", fleet.DefaultPool, "the spawn pool this node takes from")
	return cmd
}

// stableMain checks the flags and hands the supervisor to host/stable's
// Serve; it returns the exit code.
func stableMain(cmd *cobra.Command, f *stableFlags, c *stable.ServeConfig, env Env) int {
	err := f.complete(cmd.Flags(), c, env)
	if err == nil {
		var reason string
		if reason, err = stable.Serve(cmd.Context(), *c); err == nil {
			c.Logger.Debug("supervisor stopped", "reason", reason)
			return exitOK
		}
	}
	fmt.Fprintf(env.Stderr, "avenor stable: %v\n", err)
	return exitFail
}

// complete checks the flags and fills the rest of stable's ServeConfig.
func (f *stableFlags) complete(fl *pflag.FlagSet, c *stable.ServeConfig, env Env) error {
	if !fl.Changed("control-socket") {
		// docs/cli.md#avenor-control: in a directory only this user can write.
		var err error
		if c.SocketPath, err = client.DefaultServerSocket(env.Getenv("HOME")); err != nil {
			return err
		}
	}
	if c.SocketPath == "" {
		return errors.New("--control-socket is required")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--idle-timeout", c.IdleTimeout}, {"--parked-timeout", c.ParkedTimeout}, {"--shutdown-timeout", c.ShutdownTimeout}, {"--permission-claim-timeout", c.PermissionClaimTimeout}, {"--warm-idle", c.WarmIdle}, {"--linger", c.Linger}} {
		if d.v < 0 {
			return fmt.Errorf("%s must not be negative, got %v", d.name, d.v)
		}
	}
	switch {
	case f.httpDebugTokenFile != "" && f.httpDebug == "":
		return errors.New("--http-debug-token-file needs --http-debug")
	case c.MaxRuntimes < 1 || c.MaxTreeBudget < 1:
		return errors.New("--max-runtimes and --max-tree-budget must be at least 1")
	}
	for _, v := range f.warm {
		w, err := stable.ParseWarm(v)
		if err != nil {
			return err
		}
		c.Warm = append(c.Warm, w)
	}
	if n := c.Fleet; n.URL != "" || n.Node != "" {
		if n.URL == "" || n.Node == "" {
			return errors.New("--fleet and --node go together (the fleet's NATS URL and this node's name)")
		}
		for _, c := range []struct{ what, v string }{{"--node", n.Node}, {"--pool", n.Pool}} {
			if err := fleet.CheckName(c.what, c.v); err != nil {
				return err
			}
		}
	}
	c.Logger, c.Stderr, c.LingerGiven = newLogger(env), env.Stderr, fl.Changed("linger")
	c.Env = env.resolveEnv(c.Logger)
	if f.httpDebug != "" {
		c.HTTPDebug = func(hc httpdebug.Config) (*httpdebug.Server, error) {
			return hostrun.StartHTTPDebug(hc, f.httpDebug, f.httpDebugTokenFile, env.Stderr, isTerminal(env.Stderr), c.Logger)
		}
	}
	return nil
}
