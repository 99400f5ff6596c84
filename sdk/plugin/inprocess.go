package plugin

import (
	"context"
	"net"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// inProcessBuffer is the in-memory connection's buffer size.
const inProcessBuffer = 1 << 20

// ServeInProcess serves backends inside this process over real gRPC (an
// in-memory connection instead of a socket) and returns the host's Client
// for them. Every message crosses the same encoding, streams and conversion
// as with a plugin binary, so tests and the benchmark baseline exercise the
// real wire. Kill stops the server.
func ServeInProcess(ctx context.Context, info Info, logger hclog.Logger, backends ...runtime.Backend) (*Client, error) {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	srv, err := newServer(info, logger.Named("avenor-plugin-"+info.Name), backends)
	if err != nil {
		return nil, err
	}
	lis := bufconn.Listen(inProcessBuffer)
	gs := grpc.NewServer()
	registerRuntime(gs, srv)
	go func() { _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///in-process",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	)
	if err != nil {
		gs.Stop()
		return nil, err
	}
	c := &Client{path: "in-process", logger: logger, stderr: newTailBuffer(1), exited: make(chan struct{})}
	c.closeFn = func() {
		_ = conn.Close()
		srv.closeAll(shutdownBudget)
		gs.Stop()
		c.mu.Lock()
		select {
		case <-c.exited:
		default:
			close(c.exited)
		}
		c.mu.Unlock()
	}
	if err := c.describeConn(ctx, conn); err != nil {
		c.closeFn()
		return nil, err
	}
	return c, nil
}
