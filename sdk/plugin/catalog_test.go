package plugin

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// catalogBackend is a fakeBackend that answers Catalog with fn.
type catalogBackend struct {
	fakeBackend
	fn func(ctx context.Context) runtime.Catalog
}

func (b *catalogBackend) Catalog(ctx context.Context, _ runtime.CheckRequest) runtime.Catalog {
	return b.fn(ctx)
}

func serveBackend(t *testing.T, b runtime.Backend) runtime.Backend {
	t.Helper()
	c, err := ServeInProcess(context.Background(), Info{Name: "fake", Version: "0.0.1"}, nil, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	rb, ok := c.Backend("fake")
	if !ok {
		t.Fatal("backend fake not served")
	}
	return rb
}

// TestCatalogOverTheWire: a backend's catalog crosses the wire whole, a
// backend without one answers "does not list models, auth not probed", and
// a catalog that does not answer in time is an error, not a hang.
func TestCatalogOverTheWire(t *testing.T) {
	ctx := context.Background()
	want := runtime.Catalog{ModelsSupported: true, Models: []runtime.Model{{ID: "p/a", Name: "A"}, {ID: "p/b"}},
		Auth: runtime.AuthRequired, AuthMessage: "log in with x login"}
	rb := serveBackend(t, &catalogBackend{fn: func(context.Context) runtime.Catalog { return want }})
	got := rb.(runtime.Cataloger).Catalog(ctx, runtime.CheckRequest{})
	if len(got.Models) != 2 || got.Models[0] != want.Models[0] || got.Models[1] != want.Models[1] ||
		got.Auth != want.Auth || got.AuthMessage != want.AuthMessage || !got.ModelsSupported {
		t.Errorf("catalog %+v, want %+v", got, want)
	}

	plain := serveBackend(t, &fakeBackend{})
	if got := plain.(runtime.Cataloger).Catalog(ctx, runtime.CheckRequest{}); got.ModelsSupported || got.Auth != "" || got.ModelsError != "" {
		t.Errorf("a backend without Catalog answered %+v", got)
	}

	// A plugin that ignores its deadline: only the host's own bound ends
	// the wait.
	release := make(chan struct{})
	hang := serveBackend(t, &catalogBackend{fn: func(context.Context) runtime.Catalog { <-release; return runtime.Catalog{} }})
	t.Cleanup(func() { close(release) })
	hctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	got = hang.(runtime.Cataloger).Catalog(hctx, runtime.CheckRequest{})
	if got.ModelsError == "" || !got.ModelsSupported || time.Since(start) > 5*time.Second {
		t.Errorf("a hanging catalog: %+v after %v", got, time.Since(start))
	}
}

// olderPlugin is a plugin built before the Catalog RPC: it serves Describe
// only, the rest answers Unimplemented.
type olderPlugin struct {
	pb.UnimplementedRuntimeServer
}

func (olderPlugin) Describe(context.Context, *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	return &pb.DescribeResponse{PluginName: "old", PluginVersion: "0.0.1", ProtocolVersions: []uint32{ProtocolVersion},
		Backends: []*pb.BackendInfo{{Name: "old"}}}, nil
}

// TestCatalogOfAnOlderPlugin: a plugin without the Catalog RPC is read as
// "does not list models, auth not probed", not as an error.
func TestCatalogOfAnOlderPlugin(t *testing.T) {
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	pb.RegisterRuntimeServer(gs, olderPlugin{})
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()
	conn, err := grpc.NewClient("passthrough:///older",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := &Client{path: "older", logger: hclog.NewNullLogger(), stderr: newTailBuffer(1), exited: make(chan struct{})}
	if err := c.describeConn(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	b, _ := c.Backend("old")
	got := b.(runtime.Cataloger).Catalog(context.Background(), runtime.CheckRequest{})
	if got.ModelsSupported || got.ModelsError != "" || got.Auth != "" {
		t.Errorf("an older plugin's catalog: %+v", got)
	}
}
