package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/control/httpdebug"
	"github.com/avenor-go/avenor/host/plugins"
	"github.com/avenor-go/avenor/host/stable"
)

// stableFlags are the flags of `avenor stable` (contract §1.3; the workflow
// flags are not built yet).
type stableFlags struct {
	controlSocket, httpDebug, httpDebugTokenFile             string
	maxRuntimes, maxTreeBudget                               int
	idleTimeout, parkedTimeout, shutdownTimeout, claimTimout time.Duration
}

func newStableCmd(env Env) *cobra.Command {
	f := &stableFlags{}
	cmd := &cobra.Command{
		Use:   "stable --control-socket <path> [flags]",
		Short: "Run a long-lived supervisor of many runtimes, controlled through its socket",
		Long: `Run a supervisor that spawns and controls many runtimes, each in its own plugin process,
through the control socket (avenor control --socket <path> spawn|list|status|prompt|cancel|shutdown…).

Each runtime writes its events and sentinel to the paths its spawn gives, by default
$TMPDIR/avenor-stable/<supervisor run id>/<runtime id>/{events.ndjson,sentinel.env}. A runtime
whose run ended stays parked for follow-up prompts until --parked-timeout. A spawn with
loop_file or team_file runs the whole loop or team as one runtime (session_id ""). With
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
	fl.StringVar(&f.controlSocket, "control-socket", "", "Unix socket for the control plane (required); the tombstone is <socket>.dead")
	fl.StringVar(&f.httpDebug, "http-debug", "", "loopback address (:port, localhost:port, 127.0.0.1:port) of the HTTP/SSE debug adapter; the token is shown only on a terminal")
	fl.StringVar(&f.httpDebugTokenFile, "http-debug-token-file", "", "write the --http-debug token to this file (0600), for scripts")
	fl.IntVar(&f.maxRuntimes, "max-runtimes", stable.DefaultMaxRuntimes, "runtimes executing at once; parked runtimes do not count")
	fl.IntVar(&f.maxTreeBudget, "max-tree-budget", stable.DefaultMaxTreeBudget, "executing runtimes of the whole tree of nested supervisors")
	fl.DurationVar(&f.idleTimeout, "idle-timeout", 0, "exit after this long with no executing runtime and no control connection (0: never)")
	fl.DurationVar(&f.parkedTimeout, "parked-timeout", stable.DefaultParkedTimeout, "how long a finished runtime stays parked for follow-ups (0: until shutdown)")
	fl.DurationVar(&f.shutdownTimeout, "shutdown-timeout", stable.DefaultShutdownTimeout, "how long a graceful shutdown waits for cancelled runtimes")
	fl.DurationVar(&f.claimTimout, "permission-claim-timeout", 0, "how long a control client may hold a permission request (0: no deadline)")
	return cmd
}

// stableMain wires and serves the supervisor; it returns the exit code.
func stableMain(cmd *cobra.Command, f *stableFlags, env Env) int {
	if f.controlSocket == "" {
		fmt.Fprintln(env.Stderr, "avenor stable: --control-socket is required")
		return exitFail
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--idle-timeout", f.idleTimeout}, {"--parked-timeout", f.parkedTimeout}, {"--shutdown-timeout", f.shutdownTimeout}, {"--permission-claim-timeout", f.claimTimout}} {
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
	logger := hclog.New(&hclog.LoggerOptions{
		Name: "avenor", Output: env.Stderr, Level: hclog.LevelFromString(orDefault(env.Getenv("AVENOR_LOG_LEVEL"), "warn")),
	})
	token, ready, err := control.TakeEnv()
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
	sup, err := stable.New(stable.Config{
		SocketPath: f.controlSocket, MaxRuntimes: f.maxRuntimes, MaxTreeBudget: f.maxTreeBudget,
		IdleTimeout: f.idleTimeout, ParkedTimeout: f.parkedTimeout, ShutdownTimeout: f.shutdownTimeout,
		PermissionClaimTimeout: f.claimTimout, PermissionFileTimeout: fileTimeout,
		TempDir: orDefault(env.Getenv("TMPDIR"), "/tmp"), Home: env.Getenv("HOME"),
		TreeBudgetPath: env.Getenv(stable.EnvTreeBudget),
		Resolve:        stableResolver(env, logger), IdentityToken: token, Ready: ready,
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
			ctx, cancel := context.WithTimeout(context.Background(), httpDebugDrain)
			defer cancel()
			_ = dbg.Shutdown(ctx)
		}()
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	reason, err := sup.Serve(ctx)
	if err != nil {
		fmt.Fprintf(env.Stderr, "avenor stable: %v\n", err)
		return exitFail
	}
	logger.Debug("supervisor stopped", "reason", reason)
	return exitOK
}

// stableResolver resolves a spawn as avenor run resolves its flags:
// defaults < user file < project file (found from the spawn's dir) < env <
// the spawn's params, then the plugin that serves the backend.
func stableResolver(env Env, logger hclog.Logger) stable.Resolver {
	return func(dir string, set map[string]any) (stable.Backend, error) {
		dirs, err := config.DefaultDirs(env.Getenv)
		if err != nil {
			return stable.Backend{}, err
		}
		project, _ := config.FindProject(dir)
		settings, _, err := config.Load(config.Sources{Environ: env.Environ, Dirs: dirs, ProjectDir: project, Flags: set})
		if err != nil {
			return stable.Backend{}, err
		}
		families := map[string]string{}
		for name, b := range settings.Backends {
			if b.Plugin != "" {
				families[name] = b.Plugin
			}
		}
		finder := plugins.NewFinder(env.Getenv, dirs.PluginDir(), families)
		found, err := finder.Find(settings.Backend)
		if err != nil {
			var nf *plugins.NotFoundError
			if errors.As(err, &nf) {
				return stable.Backend{}, fmt.Errorf("unknown backend %q: %v", settings.Backend, err)
			}
			return stable.Backend{}, err
		}
		cfg := settings.Backends[settings.Backend]
		backend := settings.Backend
		return stable.Backend{
			Settings: settings, Env: cfg.Env, PluginOptions: cfg.Options, StateDir: dirs.PluginStateDir(found.Family),
			Launch: func(ctx context.Context) (*plugins.Launched, error) {
				return plugins.Launch(ctx, found, backend, logger)
			},
		}, nil
	}
}
