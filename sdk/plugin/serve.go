package plugin

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Bounds of a plugin process's own lifetime.
const (
	// parentPollInterval is how often a plugin checks that its host lives.
	parentPollInterval = 500 * time.Millisecond
	// shutdownBudget bounds closing every session when the plugin stops.
	shutdownBudget = 5 * time.Second
)

// Serve runs a plugin: call it from main with the plugin's identity and its
// backends. It never returns: the process exits when the host ends it.
//
// A plugin started by hand (not by avenor) prints a short explanation and
// exits 1. When the host dies — even by SIGKILL — the plugin closes every
// session, stopping the runtimes it started, and exits.
func Serve(info Info, backends ...runtime.Backend) {
	logger := hclog.New(&hclog.LoggerOptions{
		Name:       "avenor-plugin-" + info.Name,
		Level:      hclog.LevelFromString(envOr("AVENOR_PLUGIN_LOG_LEVEL", "info")),
		Output:     os.Stderr,
		JSONFormat: true, // go-plugin's host parses JSON lines into its logger
	})
	srv, err := newServer(info, logger, backends)
	if err != nil {
		fmt.Fprintln(os.Stderr, "avenor plugin:", err)
		os.Exit(1)
	}
	if os.Getenv(MagicCookieKey) != MagicCookieValue {
		fmt.Fprintf(os.Stderr, "avenor-plugin-%s %s is an avenor backend plugin; avenor starts it.\n"+
			"Put it on AVENOR_PLUGIN_PATH or next to avenor, or run `avenor plugin install %s`.\n",
			info.Name, info.Version, os.Args[0])
		os.Exit(1)
	}

	ctx, stop := context.WithCancel(context.Background())
	// The host asked us to stop, or died (SIGTERM via Pdeathsig, or noticed
	// by polling the parent pid): close every session first.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		select {
		case <-sigs:
		case <-parentGone(ctx):
		}
		srv.closeAll(shutdownBudget)
		os.Exit(0)
	}()

	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  handshake,
		VersionedPlugins: pluginSets(&grpcPlugin{server: srv}),
		GRPCServer:       goplugin.DefaultGRPCServer,
		Logger:           logger,
	})
	// go-plugin returns when the host closed the connection.
	stop()
	srv.closeAll(shutdownBudget)
	os.Exit(0)
}

// parentGone is closed when our parent process changes, i.e. the host died
// and we were reparented. Pdeathsig set by the host is the fast path; this
// poll covers the case where the host's forking thread exited before it.
func parentGone(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{})
	ppid := os.Getppid()
	go func() {
		t := time.NewTicker(parentPollInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if os.Getppid() != ppid {
					close(ch)
					return
				}
			}
		}
	}()
	return ch
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// grpcPlugin adapts the Runtime service to go-plugin.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	server *server // nil on the host side
}

func (p *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterRuntimeServer(s, p.server)
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pb.NewRuntimeClient(c), nil
}
