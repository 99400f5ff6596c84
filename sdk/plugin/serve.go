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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/avenor-go/avenor/sdk/agentproc"
	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/plugin/internal/fromproto"
	"github.com/avenor-go/avenor/sdk/plugin/internal/toproto"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Bounds of a plugin process's own lifetime.
const (
	// parentPollInterval is how often a plugin checks that its host lives.
	parentPollInterval = 500 * time.Millisecond
	// sigtermParentWait bounds how long a SIGTERM waits to tell the host's
	// death (Pdeathsig) from a live host's request to stop.
	sigtermParentWait = 500 * time.Millisecond
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

	// Orphans among our descendants — a shell tool whose runtime CLI died —
	// come to us rather than to init, so that exit finds them.
	if err := agentproc.BecomeSubreaper(); err != nil {
		logger.Debug("not a subreaper; orphaned tools are found by "+agentproc.TreeEnv+" alone", "reason", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	// A host that dies leaves our stdout and stderr pipes without a
	// reader: writing them must fail with EPIPE, not kill us by SIGPIPE
	// (fd 1 and 2 do unless SIGPIPE is notified), or a lingering plugin
	// would die at its first log line.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	srv.linger, srv.ppid = lingerFromEnv(), os.Getppid()
	if srv.linger > 0 {
		// Our socket must outlive the host's marker of its directory: a
		// host that starts after ours died removes the directories of
		// dead hosts, and would cut us off from it.
		markSocketDir(os.Getenv(goplugin.EnvUnixSocketDir), logger)
	}
	srv.lingerEnd = func() {
		srv.closeAll(shutdownBudget)
		exit(logger)
	}
	// The host asked us to stop (SIGHUP, or SIGTERM while it lives), or
	// died (SIGTERM via Pdeathsig, or noticed by polling the parent pid):
	// close every session first — after the linger window, when the host
	// died and set one.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		// Pdeathsig set by the host is the fast path; the poll covers a
		// host whose forking thread exited before it.
		gone := agentproc.ParentGone(ctx, parentPollInterval)
	wait:
		for {
			select {
			case sig := <-sigs:
				// Pdeathsig can come while the kernel is still
				// reparenting our threads: getppid may show the old
				// parent for a moment, hence the short wait.
				if sig == syscall.SIGTERM && srv.linger > 0 && srv.hostGone(sigtermParentWait) {
					srv.startLinger()
					continue
				}
				break wait
			case <-gone:
				if srv.linger > 0 {
					srv.startLinger()
					gone = nil
					continue
				}
				break wait
			}
		}
		srv.closeAll(shutdownBudget)
		exit(logger)
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
	exit(logger)
}

// exit kills every process the plugin still has below it — descendants
// found by walking /proc (orphans included: we are their subreaper) and
// every process carrying the token the host gave us — and exits. Sessions
// are closed by now: whatever is left is a runtime's leftover, and would
// otherwise outlive the host.
func exit(logger hclog.Logger) {
	n := agentproc.KillDescendants(os.Getpid())
	n += agentproc.KillMarked(agentproc.OwnTreeToken(os.Environ()))
	if n > 0 {
		logger.Debug("killed processes the runtimes left behind", "count", n)
	}
	os.Exit(0)
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
	registerRuntime(s, p.server)
	return nil
}

// registerRuntime serves srv as the Runtime service on gs.
func registerRuntime(gs grpc.ServiceRegistrar, srv *server) {
	pb.RegisterRuntimeServer(gs, runtimeService{server: srv})
}

// runtimeService is the generated Runtime service over a server: requests
// in through fromproto, answers out through toproto.
type runtimeService struct {
	pb.UnimplementedRuntimeServer
	server *server
}

func (rs runtimeService) Describe(ctx context.Context, _ *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	s := rs.server
	infos := make([]runtime.BackendInfo, 0, len(s.order))
	for _, name := range s.order {
		infos = append(infos, s.backends[name].Info())
	}
	return toproto.Description(s.info.Name, s.info.Version, []uint32{ProtocolVersion}, SDKVersion, infos), nil
}

func (rs runtimeService) Check(ctx context.Context, r *pb.CheckRequest) (*pb.CheckResponse, error) {
	s := rs.server
	req, optsErr := fromproto.Check(r)
	b, ok := s.backends[req.Backend]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "plugin %s does not serve backend %q", s.info.Name, req.Backend)
	}
	if optsErr != nil {
		return nil, status.Errorf(codes.InvalidArgument, "options: %v", optsErr)
	}
	return toproto.Readiness(b.Check(ctx, req)), nil
}

func (rs runtimeService) Session(stream pb.Runtime_SessionServer) error {
	return rs.server.session(stream)
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pb.NewRuntimeClient(c), nil
}
