package main

import (
	"cmp"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/fleet"
)

// registerFleetConn registers the NATS connection flags shared by `avenor
// stable --fleet` and `avenor fleet serve`.
func registerFleetConn(fl *pflag.FlagSet, url *string, auth *fleet.Auth, opts *fleet.Options, urlFlag, urlHelp string) {
	fl.StringVar(url, urlFlag, "", urlHelp)
	fl.StringVar(&auth.CredsFile, "fleet-creds", "", "NATS credentials file (user JWT and nkey seed)")
	fl.StringVar(&auth.NkeyFile, "fleet-nkey", "", "file holding an NATS nkey seed (SU…)")
	fl.StringVar(&auth.TLSCA, "fleet-tls-ca", "", "CA file that verifies the NATS servers' certificates")
	fl.StringVar(&auth.TLSCert, "fleet-tls-cert", "", "client certificate for mutual TLS (with --fleet-tls-key)")
	fl.StringVar(&auth.TLSKey, "fleet-tls-key", "", "client key for mutual TLS (with --fleet-tls-cert)")
	fl.IntVar(&opts.Replicas, "fleet-replicas", 1, "replicas of the fleet's streams when this member creates them (3 on a 3-server cluster)")
	fl.DurationVar(&opts.EventsMaxAge, "events-max-age", fleet.DefaultEventsMaxAge, "how long the events stream keeps an event (when this member creates it)")
	fl.Int64Var(&opts.EventsMaxBytes, "events-max-bytes", fleet.DefaultEventsMaxBytes, "size bound of the events stream (when this member creates it)")
}

func newFleetCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet <serve|dev>",
		Short: "Run stable runtimes on many machines through NATS JetStream",
		Long:  help("fleet"),
	}
	cmd.AddCommand(newFleetServeCmd(env), newFleetDevCmd(env))
	return cmd
}

func newFleetServeCmd(env Env) *cobra.Command {
	var url, socket string
	var auth fleet.Auth
	var opts fleet.Options
	var spawnTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "serve --nats <url> --control-socket <path>",
		Short: "Serve the control methods of a whole fleet on a local socket",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if socket == "" {
				fmt.Fprintln(env.Stderr, "avenor fleet serve: --control-socket is required")
				return exitError{exitFail}
			}
			logger := config.NewLogger(env.Stderr, cmp.Or(env.Getenv(config.LogLevelEnv), config.DefaultLogLevel))
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			st, closeNC, err := fleet.Join(ctx, url, "avenor fleet serve", auth, opts)
			if err != nil {
				fmt.Fprintf(env.Stderr, "avenor fleet serve: %v\n", err)
				return exitError{exitFail}
			}
			defer closeNC()
			g := fleet.NewGateway(fleet.GatewayConfig{NC: st.NC(), Stores: st, Socket: socket, SpawnTimeout: spawnTimeout, Logger: logger})
			if err := g.Serve(ctx); err != nil {
				fmt.Fprintf(env.Stderr, "avenor fleet serve: %v\n", err)
				return exitError{exitFail}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	registerFleetConn(fl, &url, &auth, &opts, "nats", "NATS server URL(s), comma-separated (nats://[user:password@]host:4222; tls:// for TLS)")
	fl.StringVar(&socket, "control-socket", "", "Unix socket to serve the fleet's control methods on (required)")
	fl.DurationVar(&spawnTimeout, "spawn-timeout", fleet.DefaultSpawnTimeout, "how long a spawn waits for a node of its pool to start it")
	return cmd
}

func newFleetDevCmd(env Env) *cobra.Command {
	var port int
	var store, host, credsDir string
	var pools []string
	cmd := &cobra.Command{
		Use:   "dev [--port N]",
		Short: "Start a single-server JetStream on loopback for trying a fleet, until interrupted",
		Long:  help("fleet-dev"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			err := fleet.ServeDev(ctx, fleet.DevServeConfig{
				DevConfig: fleet.DevConfig{StoreDir: store, Host: host, Port: port, Pools: pools},
				TempDir:   cmp.Or(env.Getenv("TMPDIR"), os.TempDir()), CredsDir: credsDir, Out: env.Stdout,
				StateDir: func() (string, error) {
					dirs, err := config.DefaultDirs(env.Getenv)
					return dirs.State, err
				},
			})
			if err != nil {
				fmt.Fprintf(env.Stderr, "avenor fleet dev: %v\n", err)
				return exitError{exitFail}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&port, "port", 0, "client port (0: a free one)")
	fl.StringVar(&host, "host", fleet.DevHost, "address to listen on (anything but loopback exposes the server to the network; its keys still guard it)")
	fl.StringSliceVar(&pools, "pool", []string{fleet.DefaultPool}, "pools to make a node key for (repeat or comma-separate)")
	fl.StringVar(&credsDir, "creds-dir", "", "directory for the generated nkey seeds (default: $XDG_STATE_HOME/avenor/fleet-dev/<port>)")
	fl.StringVar(&store, "store", "", "JetStream store directory (default: a temporary one, removed at exit)")
	return cmd
}
